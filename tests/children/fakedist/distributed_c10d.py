"""Stands in for torch/distributed/distributed_c10d.py in the outlier test: a rank that waits here looks,
to the stack classifier, like a rank waiting in a collective."""
import time


def barrier():
    while True:
        time.sleep(3600)
