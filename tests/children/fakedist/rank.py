import sys
import time

import distributed_c10d


def my_reward_func(completions):
    while True:  # a judge that never answers
        time.sleep(3600)


print("[INFO:swift] rank ready", flush=True)
if sys.argv[1] == "1":
    my_reward_func(["x"])
else:
    distributed_c10d.barrier()
