"""ms-swift reward plugins that inject real faults for bench/scoreboard.py (loaded with --external_plugins).

Each reward is an ordinary ORM; the fault happens inside the real trainer. A fault that has a moment (a hang)
writes the wall-clock time it began to $SCOREBOARD_FAULT_FILE, so the scoreboard can time watch's reaction.
"""
import os
import random
import signal
import time

import midsave  # this folder is on sys.path: swift's import_external_file puts it there
from swift.rewards import ORM, orms

midsave.install()


def _mark_fault() -> None:
    path = os.environ.get("SCOREBOARD_FAULT_FILE")
    if path and not os.path.exists(path):
        with open(path, "w") as f:
            f.write(repr(time.time()))


def _calls_past_ok(cls) -> bool:
    """Count a call of the reward ``cls``; True once it is past $SCOREBOARD_OK_CALLS healthy calls."""
    cls.calls += 1
    return cls.calls > int(os.environ.get("SCOREBOARD_OK_CALLS", "0"))


class NoisyReward(ORM):
    """Healthy: rewards vary within each group, so the loss and gradients are non-zero."""

    def __call__(self, completions, **kwargs):
        return [random.random() for _ in completions]


class RaisingReward(ORM):
    """A user reward with a bug: raises at its first call."""

    def __call__(self, completions, **kwargs):
        lengths = [len(c) for c in completions]
        raise ValueError(f"judge_score: cannot score completions of lengths {lengths}")


class StuckReward(ORM):
    """A remote judge that stops answering after $SCOREBOARD_OK_CALLS calls (0: the very first call hangs)."""

    calls = 0

    def __call__(self, completions, **kwargs):
        if _calls_past_ok(StuckReward):
            _mark_fault()
            while True:
                time.sleep(3600)
        return [random.random() for _ in completions]


class NanReward(ORM):
    """A reward that divides by a zero count from its $SCOREBOARD_OK_CALLS+1-th call: NaN rewards."""

    calls = 0

    def __call__(self, completions, **kwargs):
        if _calls_past_ok(NanReward):
            _mark_fault()
            return [float("nan") for _ in completions]
        return [random.random() for _ in completions]


class ConstantReward(ORM):
    """A reward that gives every completion the same score: zero advantage, nothing to learn."""

    def __call__(self, completions, **kwargs):
        return [1.0 for _ in completions]


def _my_rank_faults() -> bool:
    """Only the rank $SCOREBOARD_RANK (default: every rank) meets the fault: one rank of a 2-process run."""
    want = os.environ.get("SCOREBOARD_RANK")
    return want is None or os.environ.get("RANK", "0") == want


class KilledReward(ORM):
    """The kernel's OOM killer, as it meets one rank: SIGKILL to this process after $SCOREBOARD_OK_CALLS calls."""

    calls = 0

    def __call__(self, completions, **kwargs):
        if _calls_past_ok(KilledReward) and _my_rank_faults():
            _mark_fault()
            os.kill(os.getpid(), signal.SIGKILL)
        return [random.random() for _ in completions]


class RankStallReward(ORM):
    """One rank's judge call never returns after $SCOREBOARD_OK_CALLS calls: the other rank waits in the next
    collective until the process group's timeout (--ddp_timeout)."""

    calls = 0

    def __call__(self, completions, **kwargs):
        if _calls_past_ok(RankStallReward) and _my_rank_faults():
            _mark_fault()
            while True:
                time.sleep(3600)
        return [random.random() for _ in completions]


class ShortReward(ORM):
    """A reward that drops the completions it cannot parse: one score fewer than completions."""

    def __call__(self, completions, **kwargs):
        return [random.random() for _ in completions][:-1]


class NoneReward(ORM):
    """A reward function that forgot its return statement: it returns None instead of a list of scores."""

    def __call__(self, completions, **kwargs):
        _mark_fault()
        scores = [random.random() for _ in completions]  # noqa: F841 - computed, never returned: the fault
        return None


class SlowingReward(ORM):
    """A judge that slows down as its queue grows: after $SCOREBOARD_OK_CALLS calls each call waits
    $SCOREBOARD_SLOW_STEP_S seconds longer than the last (at most $SCOREBOARD_SLOW_MAX_S), so s/it collapses."""

    calls = 0

    def __call__(self, completions, **kwargs):
        if _calls_past_ok(SlowingReward):
            _mark_fault()
            late = SlowingReward.calls - int(os.environ.get("SCOREBOARD_OK_CALLS", "0"))
            time.sleep(min(late * float(os.environ.get("SCOREBOARD_SLOW_STEP_S", "0.6")),
                           float(os.environ.get("SCOREBOARD_SLOW_MAX_S", "4"))))
        return [random.random() for _ in completions]


orms["sb_noisy"] = NoisyReward
orms["sb_slowing"] = SlowingReward
orms["sb_killed"] = KilledReward
orms["sb_rank_stall"] = RankStallReward
orms["sb_short"] = ShortReward
orms["sb_none"] = NoneReward
orms["sb_raising"] = RaisingReward
orms["sb_stuck"] = StuckReward
orms["sb_nan"] = NanReward
orms["sb_constant"] = ConstantReward
