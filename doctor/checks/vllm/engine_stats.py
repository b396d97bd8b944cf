"""GD237, GD238: what vLLM's periodic engine statistics say at the end of a log: requests held but no token
generated (the engine is stuck), nothing held and nothing generated while the log ends (the engine waits for a
client that stopped sending), requests queueing behind a full KV cache.

vLLM prints one line every few seconds (``--disable-log-stats`` turns it off):
- V0 (vllm/engine/metrics.py LoggingStatLogger.log): ``Avg prompt throughput: %.1f tokens/s, Avg generation
  throughput: %.1f tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%,
  CPU KV cache usage: %.1f%%.`` (0.2-0.3 add ``Max iteration time`` and ``Avg time/tok`` in the middle);
- V1 (vllm/v1/metrics/loggers.py LoggingStatLogger): ``Engine 000: Avg prompt throughput: %.1f tokens/s, Avg
  generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix
  cache hit rate: %.1f%%``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule, evidence_of
from ...signals import LogLine

_STATS = lazyre.compile(r"Avg prompt throughput: (?P<p>[\d.]+) tokens/s, Avg generation throughput: (?P<g>[\d.]+) tokens/s,"
                    r".*?Running: (?P<run>\d+) reqs,(?: Swapped: (?P<sw>\d+) reqs,)? (?:Pending|Waiting): (?P<wait>\d+)"
                    r" reqs(?:, GPU KV cache usage: (?P<kv>[\d.]+)%)?")
MIN_LINES = 2       # stats lines in a row that make a shape (vLLM prints one every 5-10 s)
KV_FULL = 95.0      # GPU KV cache usage (%) at which waiting requests wait for cache blocks


@dataclass(frozen=True)
class Stat:
    """One line of vLLM's engine statistics."""
    prompt_tps: float
    gen_tps: float
    running: int
    waiting: int
    swapped: int
    kv_pct: float | None
    line: LogLine


def stats_of(lines: list[LogLine]) -> list[Stat]:
    out = []
    for ln in lines:
        if "throughput" not in ln.text:
            continue
        m = _STATS.search(ln.text)
        if m is None:
            continue
        out.append(Stat(float(m.group("p")), float(m.group("g")), int(m.group("run")), int(m.group("wait")),
                        int(m.group("sw") or 0), float(m.group("kv")) if m.group("kv") else None, ln))
    return out


def last_run(stats: list[Stat], test: Any) -> list[Stat]:
    """The stats lines at the end of the list that all pass ``test``."""
    out: list[Stat] = []
    for s in reversed(stats):
        if not test(s):
            break
        out.append(s)
    return out[::-1]


def shape(stats: list[Stat]) -> tuple[str, list[Stat]] | None:
    """('stuck' | 'idle' | 'kv', the lines) of the log's last stats lines, or None."""
    if not stats:
        return None
    stuck = last_run(stats, lambda s: s.prompt_tps == 0 and s.gen_tps == 0 and s.running + s.waiting > 0)
    if len(stuck) >= MIN_LINES:
        return "stuck", stuck
    idle = last_run(stats, lambda s: s.prompt_tps == 0 and s.gen_tps == 0 and s.running + s.waiting == 0)
    if len(idle) >= MIN_LINES + 1 and len(idle) < len(stats):  # it worked before, then nothing came
        return "idle", idle
    full = [s for s in stats if s.kv_pct is not None and s.kv_pct >= KV_FULL and (s.waiting > 0 or s.swapped > 0)]
    if len(full) >= MIN_LINES:
        return "kv", full
    return None


class EngineStats(Rule):
    """One class for GD237 (stuck or idle engine: hang) and GD238 (KV cache full with a queue): options.want."""

    kinds: frozenset[type] = frozenset()  # reads the last lines of each log at the end (RunState.tails)

    def __init__(self, meta: Any) -> None:
        super().__init__(meta)
        self.want = str(meta.options.get("want", "stall"))

    def finish(self, ctx: RunState) -> list[Finding]:
        out = []
        for tail in ctx.tails.values():
            found = shape(stats_of(list(tail)))
            if found is None or (found[0] == "kv") != (self.want == "kv"):
                continue
            kind, rows = found
            first, last = rows[0], rows[-1]
            if kind != "kv" and any(x.seq > first.line.seq for x in ctx.exceptions):
                continue  # an exception came after: it says why the engine stopped
            ev = [evidence_of(first.line)] + ([evidence_of(last.line)] if last is not first else [])
            if kind == "stuck":
                msg = (f"vLLM's last {len(rows)} statistics lines show {last.running} running and {last.waiting} "
                       f"waiting request(s) but 0.0 tokens/s generated and 0.0 tokens/s of prompt: the engine holds "
                       f"requests and makes no progress. Whatever sent them (in GRPO, the rollout of a training step) "
                       f"waits inside vLLM.")
                fix = ["Take the stacks while it is stuck (`py-spy dump --pid <vLLM engine or trainer PID>`): a stuck "
                       "collective or a CUDA kernel that never returns shows there.",
                       "With tensor parallelism, check that every TP worker is alive (a dead worker leaves the others "
                       "waiting); try the same run with tensor_parallel_size 1 or with enforce_eager to rule out CUDA "
                       "graph capture."]
                out.append(self.make(message=msg, fix=fix, evidence=ev, seq=first.line.seq))
            elif kind == "idle":
                msg = (f"vLLM's last {len(rows)} statistics lines show no request running or waiting and 0.0 tokens/s: "
                       f"the engine worked earlier and is now idle: no new request came, so what stopped is most likely on "
                       f"the client side (in GRPO, the trainer that sends the rollouts).")
                fix = ["Read the trainer's own log (or take its stack with `py-spy dump --pid <trainer PID>`): it "
                       "stopped before its next generate call (a collective, a reward function, a save)."]
                out.append(self.make(message=msg, fix=fix, evidence=ev, seq=first.line.seq,
                                     severity=Severity.warning))
            else:
                top = max(rows, key=lambda s: (s.waiting + s.swapped, s.kv_pct or 0))
                msg = (f"{len(rows)} vLLM statistics lines show the GPU KV cache at {top.kv_pct:.1f}% with "
                       f"{top.waiting} request(s) waiting" + (f" and {top.swapped} swapped" if top.swapped else "")
                       + ": new sequences wait for cache blocks (or are preempted and recomputed) before they "
                         "start.")
                fix = ["Give vLLM more KV cache: a higher gpu_memory_utilization (ms-swift --vllm_gpu_memory_utilization,"
                       " trl vllm_gpu_memory_utilization), a shorter max_model_len (--vllm_max_model_len), or fewer "
                       "sequences at once (vLLM max_num_seqs).",
                       "Or generate less per step: fewer completions per prompt or a shorter max_completion_length."]
                out.append(self.make(message=msg, fix=fix, evidence=ev, seq=first.line.seq))
        return out[:1]
