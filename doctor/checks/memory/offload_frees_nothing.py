"""GD206: ZeRO-3 offload that frees nothing: memory printouts labelled before/after an offload that do not change."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import MAX_EVIDENCE, Rule
from ...signals import LogLine
from ._facts import facts_of
from ._ladders import _fmt_util

_PHASE = lazyre.compile(r"(?i)^\s*(?P<label>(?:before|after)\b[^:0-9]{0,60}?)\s*[,:]?\s*$")
_MEM_KV = lazyre.compile(r"(?i)(?P<key>memory allocated|memory reserved|max memory allocated|allocated|reserved|"
                     r"device memory used(?:/total)?|memory used)\s*(?:\((?:GB|GiB|MB)\))?\s*[:=]\s*"
                     r"(?P<v>[\d.]+)(?:\s*/\s*(?P<t>[\d.]+))?")


class OffloadFreesNothing(Rule):
    """Memory printouts labelled before/after an offload that do not change (dev-log 006)."""

    kinds = frozenset({LogLine})
    literals = ("offload", "memory allocated", "memory reserved", "memory used", "vllm init", "allocated (",
                "reserved (")
    idle_silent = True   # fed nothing: no phases (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.phases: list[tuple[str, dict[str, float], Evidence, int]] = []
        self._label: tuple[str, Evidence, int] | None = None
        self._vals: dict[str, float] = {}

    def _close(self) -> None:
        if self._label and self._vals:
            self.phases.append((self._label[0], dict(self._vals), self._label[1], self._label[2]))
        self._vals = {}

    def feed(self, signal: Any) -> None:
        if len(self.phases) > 1000:
            return
        line = signal
        text = line.text
        m = _PHASE.match(text)
        if m and ("offload" in text.lower() or "vllm" in text.lower() or "init" in text.lower()):
            self._close()
            self._label = (m.group("label").strip().rstrip(","), Evidence(line.where.path, line.where.line, line.raw),
                           line.seq)
            # "after model offload, memory allocated (GB): 5.59" on one line
        if self._label is None:
            return
        for mm in _MEM_KV.finditer(text):
            key = mm.group("key").lower()
            self._vals[key] = float(mm.group("v"))
            if mm.group("t"):
                self._vals["total"] = float(mm.group("t"))

    def finish(self, ctx: RunState) -> list[Finding]:
        self._close()
        same: list[tuple[str, str]] = []
        ev: list[Evidence] = []
        seq = 0
        for (l0, v0, e0, s0), (l1, v1, e1, s1) in zip(self.phases, self.phases[1:]):
            if "offload" not in l1.lower():
                continue
            keys = [k for k in v1 if k != "total" and k in v0]
            if not keys:
                continue
            if all(v1[k] >= v0[k] - 0.01 for k in keys):
                same.append((l0, l1))
                if not ev:
                    ev.append(e0)
                    seq = s0
                ev.append(e1)
        if not same:
            return []
        last = self.phases[0][1]
        alloc = last.get("memory allocated", last.get("allocated"))
        f = facts_of(ctx.run)
        labels = ", ".join(f"'{b}'" for _, b in same)
        msg = (f"Offloading freed no GPU memory: the readings at {labels} equal the ones before"
               + (f" (allocated {alloc:g} GB)" if alloc is not None else "") + ". Under DeepSpeed ZeRO-3 the parameter "
               "shards live in param.ds_tensor and param.data is an empty placeholder, so an offload that moves "
               "param.data (ms-swift's offload_model before the ZeRO-3-aware fix) releases nothing, and vLLM then starts "
               "without the room it was promised.")
        if f.zero is not None and f.zero != 3:
            msg += f" (This run's DeepSpeed config is {f.ds_raw}, not ZeRO-3: check what the offload moves.)"
        fix = ["Upgrade ms-swift to a release with the ZeRO-3-aware offload (it offloads the ds_tensor shards and the "
               "optimizer state tensors), then re-check the readings.",
               f"Until then: lower --vllm_gpu_memory_utilization{f' (now {_fmt_util(f.util)})' if f.util_set else ''} so "
               f"vLLM fits without the offload, or run vLLM as a separate server (--vllm_mode server + swift rollout).",
               "--offload_optimizer true only helps once the optimizer states are offloaded too; verify with the same "
               "printout after the optimizer offload."]
        return [self.make(message=msg, fix=fix, evidence=ev[:MAX_EVIDENCE], seq=seq)]
