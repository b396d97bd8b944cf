"""The pace a pasted progress bar shows, for a paste whose words say training is slow: the bar is the run's own
measure (tqdm's rate and elapsed/remaining, tqdm/std.py format_meter), so the report reads it instead of asking for
it. Pure."""
from __future__ import annotations

from typing import NamedTuple

from ...signals import LogLine
from .._units import duration
from .endings import BAR


class Pace(NamedTuple):
    line: LogLine
    done: int
    total: int
    seconds_per_step: float
    rate: str          # as the bar printed it ("93.59s/it", "1.20it/s")
    elapsed: str
    remaining: str


def bar_pace(lines: list[LogLine]) -> Pace | None:
    """The last bar of these lines that prints a rate (a line of redraws: its last bar)."""
    for ln in reversed(lines):
        if "%|" not in ln.text:
            continue
        found = None
        for m in BAR.finditer(ln.text):
            if m.group("rate"):
                found = m
        if found is None:
            continue
        rate = found.group("rate").replace(" ", "")
        value = float(rate[:-4])
        if value <= 0:
            continue
        seconds = value if rate.endswith("s/it") else 1.0 / value
        return Pace(ln, int(found.group("k")), int(found.group("n")), seconds, rate,
                    found.group("elapsed") or "", (found.group("remaining") or "").strip("?"))
    return None


def pace_sentence(p: Pace) -> str:
    """What the bar says of the run's pace, with the numbers read and the one computed."""
    told = f"{p.done} of {p.total} steps at {p.rate}"
    if p.elapsed:
        told += f" ({p.elapsed} elapsed" + (f", {p.remaining} left)" if p.remaining else ")")
    total = p.total * p.seconds_per_step
    return (f"The pasted bar shows the pace: {told}, so the whole bar takes about {duration(total)} at that rate "
            f"({p.total} x {p.seconds_per_step:.6g} s, computed).")


PACE_FIX = ("Where one step's time goes decides the fix: in a GRPO/PPO step most of it is usually generation "
            "(num_generations completions of up to max_completion_length tokens per prompt); a run that generates with "
            "the model's own generate instead of a vLLM engine, or with long completions, is slow by design. Paste the "
            "launch command (generation backend, num_generations, max_completion_length, batch sizes) and `nvidia-smi` "
            "taken while it runs (GPU utilisation, memory) so that the slow part can be named.")
# a run that samples no completions (SFT, DPO, pre-training): its step has no generation to blame
PACE_FIX_UNSCORED = ("Where one step's time goes decides the fix: in a run without rollouts it is usually data loading "
                     "on the CPU (too few dataloader workers, images decoded per step), gradient checkpointing and "
                     "ZeRO-3 or CPU offload (each trades speed for memory), or evaluation and saving too often. Paste "
                     "the launch command and `nvidia-smi` taken while it runs (GPU utilisation, memory); the bar's "
                     "seconds per step before and after one change tell which.")
