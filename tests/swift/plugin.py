"""External ms-swift plugin for the watch tests: one reward that varies (a healthy run) and one that never
returns (a run hung in its reward function)."""
import random
import time

from swift.rewards import ORM, orms


class NoisyReward(ORM):
    def __call__(self, completions, **kwargs):
        return [random.random() for _ in completions]


class StuckReward(ORM):
    def __call__(self, completions, **kwargs):
        return wait_for_judge_forever(completions)


def wait_for_judge_forever(completions):
    while True:  # a judge service that never answers
        time.sleep(3600)


orms["noisy_reward"] = NoisyReward
orms["stuck_reward"] = StuckReward
