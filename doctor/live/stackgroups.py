"""Hang evidence that names the culprit: group identical py-spy stacks across ranks and processes, name the call the
majority waits in (the collective, when it is one) and the ranks that are elsewhere.

The NCCL flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE) is not read: the dump PyTorch writes to a file
(TORCH_NCCL_DEBUG_INFO_TEMP_FILE, on timeout or through TORCH_NCCL_DEBUG_INFO_PIPE_FILE) is a pickle, and watch never
unpickles anything from a run; its JSON form exists only inside the process (``_dump_nccl_trace_json``). The hang
report says so when the run sets TORCH_NCCL_TRACE_BUFFER_SIZE.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

from .actions import Stack, _focus

DEPTH = 8  # frames of the signature (innermost first)
COLLECTIVES = ("all_reduce", "broadcast", "barrier", "all_gather", "all_gather_into_tensor", "all_gather_object",
               "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "reduce", "gather",
               "scatter", "send", "recv", "isend", "irecv", "monitored_barrier", "broadcast_object_list",
               "gather_object", "scatter_object_list", "batch_isend_irecv")


@dataclass
class Group:
    """Processes whose stacks stop in the same frames."""
    frames: tuple[tuple[str, str, int], ...]   # the first member's focus frames (innermost first)
    members: list[Stack]

    @property
    def who(self) -> str:
        ranks = sorted(s.rank for s in self.members if s.rank is not None)
        pids = [s.pid for s in self.members if s.rank is None]
        parts = ([f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"] if ranks else []) + \
                ([f"pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}"] if pids else [])
        return " and ".join(parts)

    def call(self) -> str:
        """The collective on the stack (innermost), else the innermost frame."""
        for func, path, line in self.frames:
            if func in COLLECTIVES or func.lstrip("_") in COLLECTIVES:
                return f"{func} ({os.path.basename(path)}:{line})"
        if not self.frames:
            return "no Python frames"
        func, path, line = self.frames[0]
        return f"{func} ({os.path.basename(path)}:{line})"

    def is_collective(self) -> bool:
        return any(f in COLLECTIVES or f.lstrip("_") in COLLECTIVES for f, _, _ in self.frames)


def group(stacks: list[Stack]) -> list[Group]:
    """Groups of identical focus stacks (function and file of the innermost DEPTH frames; line numbers may differ),
    biggest first; launchers (torchrun, the swift CLI waiting for its children) are left out."""
    by: dict[tuple, Group] = {}
    order: dict[tuple, int] = defaultdict(int)
    for i, s in enumerate(x for x in stacks if not x.launcher):
        focus = _focus(s.threads)
        frames = tuple(focus[2]) if focus is not None else ()
        key = tuple((f, os.path.basename(p)) for f, p, _ in frames[:DEPTH])
        if key not in by:
            by[key] = Group(frames, [])
            order[key] = i
        by[key].members.append(s)
    return sorted(by.values(), key=lambda g: (-len(g.members), order[tuple((f, os.path.basename(p))
                                                                          for f, p, _ in g.frames[:DEPTH])]))


def culprit(stacks: list[Stack]) -> str | None:
    """One sentence: where the majority waits and who is elsewhere; None with fewer than two processes or when all
    are in one place and that place is not a collective."""
    groups = group(stacks)
    total = sum(len(g.members) for g in groups)
    if total < 2:
        return None
    main = groups[0]
    if len(groups) == 1:
        return (f"All {total} processes ({main.who}) wait in {main.call()}" if main.is_collective() else None)
    if len(main.members) == len(groups[1].members):
        return "No majority: " + "; ".join(f"{g.who} in {g.call()}" for g in groups[:4])
    others = "; ".join(f"{g.who} {'is' if len(g.members) == 1 else 'are'} elsewhere: {g.call()}" for g in groups[1:4])
    more = f"; and {len(groups) - 4} more groups" if len(groups) > 4 else ""
    return f"{len(main.members)} of {total} processes ({main.who}) wait in {main.call()}; {others}{more}"


def grouped_text(stacks: list[Stack]) -> str:
    """The hang file's section: one block per group of identical stacks."""
    out = []
    for g in group(stacks):
        out.append(f"{len(g.members)} x {g.who}:")
        out += [f"    {f} ({p}:{ln})" for f, p, ln in g.frames[:DEPTH]] or ["    (no Python frames)"]
    return "\n".join(out)


def flight_recorder_note(env: dict[str, str]) -> str | None:
    size = env.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "").strip()
    if not size or size == "0":
        return None
    return ("TORCH_NCCL_TRACE_BUFFER_SIZE is set, but the NCCL flight recorder's dump file is a pickle: watch never "
            "unpickles anything from a run, so it is not read here. Read it yourself on a trusted machine with "
            "PyTorch's flight recorder analyzer (tools/flight_recorder/fr_trace.py); set TORCH_NCCL_DUMP_ON_TIMEOUT=1 and "
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE to get one per rank when the collective times out.")
