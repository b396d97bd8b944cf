"""Slowness behind a collective timeout (GD301): steps as long as the NCCL timeout itself.

torch's ProcessGroupNCCL watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ``WorkNCCL::checkTimeout``,
torch 2.1-2.8) aborts a collective whose work item has been pending longer than the process group's timeout, counted
from the moment *this* rank enqueued it. A rank that reaches the gradient all-reduce while a peer is still generating
(a long rollout) or scoring waits for that peer the whole difference: when a training step takes about as long as the
timeout, or longer, an uneven step is enough to trip it, with every rank alive. The progress bar says so: tqdm's rate
(``5727.61s/it``) is the recent seconds per step.

Cases: modelscope/ms-swift#6877 (Qwen3-VL GRPO, 5727-7386 s/it, then an ALLREDUCE timeout at Timeout(ms)=600000) and
huggingface/trl#1902 (a timeout during long steps that a larger timeout removed); a near miss,
hiyouga/LlamaFactory#8261 (2.8 s/it against 600 s: the steps say nothing about that timeout).
"""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...signals import LogLine

_RATE = lazyre.compile(r"\|\s*(\d+)/(\d+)\s*\[([0-9:]+)<[^,\]]*,\s*([\d.]+)\s*s/it\]")
SLOW_RATIO = 0.5  # a step of at least half the timeout: the same order of magnitude


def _seconds(hms: str) -> int:
    s = 0
    for part in hms.split(":"):
        s = s * 60 + int(part)
    return s


def last_rate(pool: dict[str, Any] | None, ctx: RunState, before_seq: int) -> tuple[float, int, int, str, LogLine] | None:
    """(seconds per step, step, total, elapsed, bar line) of the last training progress bar before ``before_seq``:
    the hang rules' progress (the last training bar they kept), else the last lines of the logs."""
    cands: list[LogLine] = []
    prog = (pool or {}).get("hang-progress")
    if prog is not None:
        cands += [ln for ln in (prog.phase_line.get("training"), prog.step_line) if ln is not None]
    for tail in ctx.tails.values():
        cands += [ln for ln in tail if "s/it]" in ln.text]
    best = None
    for ln in cands:
        if ln.seq > before_seq:
            continue
        m = _RATE.search(ln.text)
        if m and (best is None or ln.seq > best[4].seq):
            best = (float(m.group(4)), int(m.group(1)), int(m.group(2)), m.group(3), ln)
    return best


def slow_steps(pool: dict[str, Any] | None, ctx: RunState, before_seq: int, timeout_ms: int | None
               ) -> tuple[str, list[str], LogLine] | None:
    """(sentence, fix lines, the bar line) when the steps before the timeout are as long as the timeout, else None."""
    if not timeout_ms:
        return None
    got = last_rate(pool, ctx, before_seq)
    if got is None:
        return None
    rate, step, total, elapsed, line = got
    timeout_s = timeout_ms / 1000
    if rate < SLOW_RATIO * timeout_s:
        return None
    minutes = rate / 60
    why = (f"The last progress bar before the timeouts (line {line.where.line}) shows {rate:g} s/it at step {step} of "
           f"{total} ({elapsed} elapsed), read: one training step takes about {minutes:.0f} min, "
           f"{rate / timeout_s:.1f} x the NCCL timeout of {timeout_s / 60:g} min (computed). With steps this long, a "
           "rank still generating (a long rollout) or scoring when the others reach the collective makes them wait "
           "past the timeout: slowness, not a dead rank, is the likely cause.")
    need = int(max(2 * rate, timeout_s * 2))
    fix = [f"Make a step much shorter than the timeout: cap the completion length (--max_completion_length; vLLM "
           f"max_tokens) and the prompt/image size, and check that rollouts run on vLLM (--use_vllm true): "
           f"{rate:g} s/it means {total} steps take {rate * total / 86400:.0f} days (computed).",
           f"Raise the timeout above the step time while you do: --ddp_timeout {need} (seconds, 2 x the step time, "
           "computed).",
           "Log each step's generation and training time (completions per step, completion length) to find the "
           "rank or sample that makes a step slow."]
    return why, fix, line
