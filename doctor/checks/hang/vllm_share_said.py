"""The vLLM memory share a paste sets, read beside words that say vLLM found no room for its KV cache.

vLLM sizes its KV cache from one budget: total GPU memory x gpu_memory_utilization, less the peak memory of the
model's profiling forward pass (weights and activations): vLLM 0.4-0.6 worker/worker.py determine_num_available_blocks,
0.7+ v1/worker/gpu_worker.py determine_available_memory; when nothing is left, worker.py raise_if_cache_size_invalid
says "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the
engine." A small share is the usual cause: people lower it expecting vLLM to use less memory, and the weights alone
then fill the budget. Pure: the paste's lines in, a reading out."""
from __future__ import annotations

from dataclasses import dataclass

from ... import lazyre
from ...signals import LogLine

# a setting in code or on a command line: `gpu_memory_utilization=0.1`, `--gpu-memory-utilization 0.2`,
# `vllm_gpu_memory_utilization: 0.3`
_SET = lazyre.compile(r"(?i)(?:--)?(?:vllm[_-])?gpu[_-]memory[_-]utilization['\"]?\s*(?:=|:|\s)\s*(0?\.\d+|1(?:\.0+)?)(?![\d.])")
# the same named in a sentence: "reduce the value of gpu_memory_utilization to 0.1"
_SAID = lazyre.compile(r"(?i)gpu[_-]memory[_-]utilization`?\s+(?:\w+\s+){0,2}?to\s+(0?\.\d+)(?![\d.])")
# a share below this leaves most GPUs no room for a 7B model's weights and a cache beside them
_SMALL = 0.5


@dataclass(frozen=True, slots=True)
class ShareSaid:
    share: float
    line: LogLine


def share_said(lines: list[LogLine]) -> ShareSaid | None:
    """The first share a setting line gives (code, a command, a config: the author's own run, before any reply that
    quotes it), else the first one a sentence names."""
    for rx in (_SET, _SAID):
        for ln in lines:
            m = rx.search(ln.text)
            if m is not None:
                return ShareSaid(float(m.group(1)), ln)
    return None


def small_share(lines: list[LogLine]) -> tuple[str, str, LogLine] | None:
    """(sentence, fix, line) when the paste sets a small share beside a KV-cache failure, else None."""
    said = share_said(lines)
    if said is None or said.share >= _SMALL:
        return None
    pct = f"{said.share * 100:.0f}%"
    sentence = (f"The paste sets gpu_memory_utilization {said.share:g} (line {said.line.where.line}): that share of "
                f"the GPU's memory ({pct}) is vLLM's whole budget, the weights and the profiling pass's activations "
                f"included, and the KV cache gets what is left of it; a small share leaves nothing, which is why "
                f"vLLM's own message asks to increase it.")
    fix = (f"Raise gpu_memory_utilization from {said.share:g} (read from the paste): 0.9 when vLLM has the GPU "
           f"alone, or the share the other processes on that GPU leave free; lowering it never makes a model fit.")
    return sentence, fix, said.line


__all__ = ["ShareSaid", "share_said", "small_share"]
