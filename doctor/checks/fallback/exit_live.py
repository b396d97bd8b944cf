"""GD995 (``grpo-doctor watch``): the command failed (non-zero exit, or killed by a signal) and no other rule found
an error: the exit itself is the finding, with the last lines of output, and for SIGKILL the kernel log's OOM lines
and the last host memory samples. Live-only signals (doctor/signals_live.py); pure, no I/O."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule, evidence_of
from ...signals import HostTick, RunExit
from .._units import gib

TAIL = 5


def kill_facts(exit_: RunExit, host: list[HostTick]) -> str:
    """What watch read about a SIGKILL of its command: the kernel log's OOM line (or why it could not be read) and the
    last host memory samples; shared by GD995 and GD310 (checks/distributed/host_oom.py)."""
    if exit_.kernel_lines:
        out = f" The kernel log says: {exit_.kernel_lines[-1][:200]}"
    else:
        out = (" The kernel log has no OOM kill of the run's processes"
               + ("" if exit_.kernel_note is None else f" (not readable: {exit_.kernel_note[:160]})") + ".")
    if host:
        last = host[-1]
        low = min(host, key=lambda x: x.available)
        out += (f" Last host memory sample ({last.t:.0f} s): {gib(last.available)} available of {gib(last.total)}; "
                f"lowest of the last {len(host)}: {gib(low.available)}.")
    return out


class ExitWithoutDiagnosis(Rule):
    kinds = frozenset({RunExit, HostTick})

    def __init__(self, meta):
        super().__init__(meta)
        self.exit: RunExit | None = None
        self.host: list[HostTick] = []

    def feed(self, signal: Any) -> None:
        if isinstance(signal, RunExit):
            self.exit = signal
        else:
            self.host = (self.host + [signal])[-3:]

    def finish(self, ctx: RunState) -> list[Finding]:
        e = self.exit
        if e is None or e.code == 0 or any(f.severity >= Severity.error for f in ctx.findings) or ctx.exceptions:
            return []
        how = (f"was killed by signal {-e.code} ({e.signal_name or '?'})" if e.code < 0 else
               f"exited with status {e.code}")
        msg = f"The command {how} after {e.t:.0f} s, and grpo-doctor found no error in its output."
        fix = list(self.meta.fix)
        if e.signal_name == "SIGKILL":
            msg += (" SIGKILL is the host OOM killer's signature (a process killed that way prints nothing); it is "
                    "also what a scheduler or a person's `kill -9` sends.")
            msg += kill_facts(e, self.host)
            fix.insert(0, "Confirm with `dmesg -T | grep -iE 'killed process|out of memory'` (root) or the scheduler's "
                          "job log; lower host RAM use (dataloader workers, CPU offload, processes per node).")
        ev: list[Evidence] = []
        for lines in ctx.tails.values():
            ev.extend(evidence_of(ln) for ln in list(lines)[-TAIL:])
        ev.extend(Evidence("<kernel log>", 0, ln[:300]) for ln in e.kernel_lines[-2:])
        return [self.make(message=msg, fix=fix, evidence=ev[-(TAIL + 2):])]
