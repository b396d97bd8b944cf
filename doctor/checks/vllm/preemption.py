"""GD212: vLLM's V0 scheduler preempts running sequences for lack of KV cache blocks (core/scheduler.py `_preempt`
logs it every 50th time with the running count): generation slows down, nothing crashes."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_number
from ..memory._facts import Facts, facts_of
from ..memory._ladders import _fmt_util


def _flags(f: Facts) -> tuple[str, str, str]:
    """The spelling of the utilisation, sequence-count and length flags in the launch that ran vLLM."""
    if f.server_launch is not None and f.trainer_launch is None and f.server_launch.command in ("serve", "vllm-serve"):
        dash = "-" if f.server_launch.command == "serve" else "_"
        return tuple(f"--{n.replace('_', dash)}" for n in ("gpu_memory_utilization", "max_num_seqs", "max_model_len"))
    if f.known and f.framework == "swift":
        return "--vllm_gpu_memory_utilization", "--vllm_max_num_seqs", "--vllm_max_model_len"
    return "gpu_memory_utilization", "max_num_seqs", "max_model_len"


def preemption_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    counts = [int(h.groups["count"]) for h in hits if h.groups.get("count")]
    modes = sorted({h.groups["mode"] for h in hits if h.groups.get("mode")})
    total = max(counts) if counts else None
    how = " and ".join(modes) or "RECOMPUTE"
    msg = (f"vLLM preempted running sequences ({how} mode) because its KV cache had no free block"
           + (f": {total} preemptions by the last warning (vLLM logs every 50th)" if total else "")
           + ". Each preemption throws away or swaps out a sequence's cache and redoes the work, so generation slows "
             "to a fraction of its speed; the run is not stopped by it.")
    f = facts_of(ctx.run, ())
    util_flag, seqs_flag, len_flag = _flags(f)
    util = f.util if f.util_set else None
    if f.server_launch is not None and f.trainer_launch is None:
        util = as_number(f.server_launch.flags.get("gpu_memory_utilization"))
    raise_util = (f"{util_flag} above {_fmt_util(util)} (read from the command) if the GPU has the memory"
                  if util is not None else f"a higher {util_flag} (vLLM's default is 0.9) if the GPU has the memory")
    fix = [f"Give vLLM more KV cache: {raise_util}, or tensor parallelism over more GPUs.",
           f"Or ask for less at once: a lower {seqs_flag} (sequences generated together), a shorter {len_flag} or "
           f"completion budget."]
    if "SWAP" in modes:
        fix.append("SWAP mode also copies each preempted sequence to CPU memory and back (swap_space): RECOMPUTE, the "
                   "default since vLLM 0.4, is usually faster.")
    return Diagnosis(message=msg, fix=tuple(fix))
