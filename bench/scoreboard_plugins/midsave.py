"""SIGTERM to the run's whole process group while a checkpoint file is being written (bench/scoreboard.py).

What a scheduler's time limit, a preemption or `docker stop` does to a run that happens to be saving: every process
of the job gets SIGTERM, Python's default action ends each at once, and the file being written stays cut short. The
signal is sent from inside the save so that it lands mid-write every time (a save of the tiny model takes a few
milliseconds: a signal from outside would mostly miss it). Used by the ms-swift plugins (faults.py) and the TRL
script (trl_grpo.py) when $SCOREBOARD_SIGTERM_IN_SAVE names the file, e.g. ``checkpoint-4/optimizer.pt``.
"""
from __future__ import annotations

import io
import os
import signal
import time


def install() -> None:
    target = os.environ.get("SCOREBOARD_SIGTERM_IN_SAVE")
    if not target:
        return
    import torch

    real_save = torch.save

    def save(obj, f, *args, **kwargs):
        if not isinstance(f, (str, os.PathLike)) or not os.fspath(f).endswith(target):
            return real_save(obj, f, *args, **kwargs)
        buf = io.BytesIO()
        real_save(obj, buf, *args, **kwargs)
        data = buf.getvalue()
        with open(f, "wb") as out:
            out.write(data[: len(data) // 2])     # the first half is on disk when the signal comes
            out.flush()
            os.fsync(out.fileno())
            path = os.environ.get("SCOREBOARD_FAULT_FILE")
            if path and not os.path.exists(path):
                with open(path, "w") as mark:
                    mark.write(repr(time.time()))
            os.killpg(os.getpgrp(), signal.SIGTERM)
            time.sleep(60)                        # the default action of SIGTERM ends the process here
        return None

    torch.save = save
