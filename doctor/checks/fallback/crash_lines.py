"""What the lines around a native crash say beyond its signal: the function the crashing instruction was in
(abseil's failure signal handler, which Ray, glog-style tools and TensorFlow install, prints "PC: @ <address>
(unknown) <symbol>"), and whether CPython's faulthandler dump is there and holds the crashing thread. Pure: reads the
session's tails."""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...rules import Hit
from ..hang.endings import FATAL, FAULT_THREAD

# absl/debugging/failure_signal_handler.cc WriteStackTrace: "PC: @ 0x7f... (unknown) symbol()"; the symbol is
# "(unknown)" when the binary has no symbols
_PC_LINE = lazyre.compile(r"PC: @\s+0x[0-9a-f]+\s+\S+\s+(?P<symbol>[A-Za-z_][\w:<>~]*)\(")
# NCCL's own functions (its proxy thread moves the data of every collective between nodes: src/proxy.cc
# addProxyOpIfNeeded, ncclProxy*) and the InfiniBand verbs / UCX transport under it
_NCCL_SYMBOL = lazyre.compile(r"^(?:nccl|addProxyOp|ncclProxy|ibv_|uct_|ucp_|ucs_)", re.I)
# the block of one thread when faulthandler dumps only the crashing one (faulthandler.enable(all_threads=False));
# the dump's first line and its per-thread headers are the hang rules' (endings.FATAL, endings.FAULT_THREAD)
_ONE_STACK = "Stack (most recent call first)"


def crash_symbol(hit: Hit, ctx: RunState) -> str | None:
    """The named function the crashing instruction was in, from abseil's PC line near the crash line."""
    tail = ctx.tails.get(hit.evidence.path) or ()
    for t in tail:
        if hit.seq - 6 <= t.seq <= hit.seq + 12 and "PC: @" in t.text:
            m = _PC_LINE.search(t.text)
            if m and m.group("symbol") != "unknown":
                return m.group("symbol")
    return None


def in_nccl(symbol: str | None) -> bool:
    return bool(symbol and _NCCL_SYMBOL.match(symbol))


def nccl_owner(symbol: str) -> str:
    """Whose function an NCCL-side symbol is: NCCL's own, or the transport under it (verbs and UCX are not NCCL)."""
    if symbol.lower().startswith(("ibv_", "uct_", "ucp_", "ucs_")):
        return "a function of the network transport NCCL runs on (InfiniBand verbs or UCX)"
    return "a function of NCCL (its proxy thread moves every collective's data between GPUs and nodes)"


def faulthandler_dump(hit: Hit, ctx: RunState) -> str | None:
    """None when no faulthandler dump follows the crash line; "current" when it holds the crashing thread's stack
    alone ("current among others" beside other threads'); "others" when the paste shows only other threads' stacks;
    "header" when it stops at the dump's first line."""
    tail = ctx.tails.get(hit.evidence.path) or ()
    seen = current = others = False
    for t in tail:
        if not hit.seq - 12 <= t.seq <= hit.seq + 80:
            continue
        text = t.text.strip()
        seen = seen or text.startswith(FATAL)
        header = FAULT_THREAD.match(text)
        current = current or text.startswith(_ONE_STACK) or bool(header and text.startswith("Current"))
        others = others or bool(header and not text.startswith("Current"))
    if not seen:
        return None
    if current:
        return "current" if not others else "current among others"
    return "others" if others else "header"


__all__ = ["crash_symbol", "faulthandler_dump", "in_nccl", "nccl_owner"]
