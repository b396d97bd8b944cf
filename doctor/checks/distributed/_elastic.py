"""torchrun's (elastic agent's) ChildFailedError block, read by GD307 (which rank failed first) and GD310
(a rank killed with SIGKILL)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ... import lazyre
from ...signals import LogLine
from ...values import as_int

# torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: {code}) local_rank: {rank} (pid: {pid}) of
# binary: {bin}"; a paste may end before the pid
_AGENT_FAILED = lazyre.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)(?: \(pid: (\d+)\))?")
_FIELD = lazyre.compile(r"^\s*(rank|exitcode|error_file|traceback|msg)\s*:\s*(.*)$")
_RANK_FIELD = lazyre.compile(r"(-?\d+)(?: \(local_rank: (\d+)\))?")
_EXIT_FIELD = lazyre.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")
_SIGNAL = lazyre.compile(r"Signal (\d+) \((SIG\w+)\)")
SIGNALS = {-9: "SIGKILL", -15: "SIGTERM", -6: "SIGABRT", -11: "SIGSEGV", -7: "SIGBUS", -2: "SIGINT", -1: "SIGHUP"}


@dataclass
class Failure:
    """One failure of torchrun's ChildFailedError table."""
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    traceback: str = ""
    error_file: str = ""
    root: bool = False
    lines: list[LogLine] = field(default_factory=list)

    @property
    def signal(self) -> str | None:
        m = _SIGNAL.search(self.traceback)
        if m:
            return m.group(2)
        return SIGNALS.get(self.exitcode) if self.exitcode is not None and self.exitcode < 0 else None


class ElasticBlock:
    """Parses torchrun's ChildFailedError summary and the agent's 'failed (exitcode: N)' line."""

    LITERALS = ("ChildFailedError", "Failures:", "Root Cause", "local_rank", "exitcode", "traceback :", "traceback:",
                "c10::DistBackendError", "Watchdog caught collective operation timeout")

    def __init__(self) -> None:
        self.failures: list[Failure] = []
        self.agent: list[tuple[int, int, int | None, LogLine]] = []  # exitcode, local_rank, pid, line
        self.header: LogLine | None = None
        self.nccl_abort = False  # the NCCL watchdog aborted a process (its SIGABRT is then a consequence)
        self._section: str | None = None
        self._cur: Failure | None = None

    def feed(self, line: LogLine) -> None:
        text = line.text
        if "failed (exitcode:" in text:
            m = _AGENT_FAILED.search(text)
            if m:
                self.agent.append((int(m.group(1)), int(m.group(2)), as_int(m.group(3)), line))
            return
        if "ChildFailedError" in text:
            if "ChildFailedError:" in text or text.rstrip().endswith("ChildFailedError"):
                self.header = self.header or line
            return
        if "c10::DistBackendError" in text or "Watchdog caught collective operation timeout" in text:
            self.nccl_abort = True
            return
        stripped = text.strip()
        if stripped.startswith("Root Cause"):
            self._section = "root"
            self._cur = None
            return
        if stripped == "Failures:":
            self._section = "failures"
            self._cur = None
            return
        if self._section is None:
            return
        m = _FIELD.match(text)
        if not m:
            return
        key, val = m.group(1), m.group(2).strip()
        if key == "rank":
            r = _RANK_FIELD.match(val)
            self._cur = Failure(root=self._section == "root")
            self._cur.lines.append(line)
            if r:
                self._cur.rank = int(r.group(1))
                self._cur.local_rank = as_int(r.group(2))
            self.failures.append(self._cur)
            return
        cur = self._cur
        if cur is None:
            return
        if key != "error_file":
            cur.lines.append(line)
        if key == "exitcode":
            e = _EXIT_FIELD.match(val)
            if e:
                cur.exitcode = int(e.group(1))
                cur.pid = as_int(e.group(2))
        elif key in ("traceback", "msg"):
            cur.traceback = val
        elif key == "error_file":
            cur.error_file = val

    @property
    def root(self) -> Failure | None:
        roots = [f for f in self.failures if f.root]
        if roots:
            return roots[0]
        if self.agent:
            code, local, pid, line = self.agent[0]
            return Failure(None, local, code, pid, "", "", True, [line])
        return None

    def others(self) -> list[Failure]:
        return [f for f in self.failures if not f.root]

    @property
    def seen(self) -> bool:
        return bool(self.failures or self.agent or self.header)
