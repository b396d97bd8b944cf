"""What Ray's memory monitor says about a kill (ray/_private/memory_monitor.py, raylet node_manager.cc): the node's
memory use against its threshold, and the table of the biggest memory users that ray.exceptions.OutOfMemoryError
prints ("PID MEM(GB) COMMAND"). Read by GD310 to name what filled the node."""
from __future__ import annotations

from collections import Counter

from ... import lazyre
from ...signals import LogLine

LITERALS = ("Memory on the node", "MEM(GB)", "ray::")
# "Memory on the node (IP: 10.0.0.1, ID: ...) where the task (..., memory used=56.57GB) was running was
# 246.41GB / 251.54GB (0.979583), which exceeds the memory usage threshold of 0.95."
_NODE = lazyre.compile(r"was running was (?P<used>[\d.]+)GB / (?P<total>[\d.]+)GB \((?P<frac>[\d.]+)\)"
                   r"(?:, which exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?))?")
_TASK = lazyre.compile(r"memory used=(?P<task>[\d.]+)GB")
_ROW = lazyre.compile(r"^\s*(?P<pid>\d+)\s+(?P<gb>\d+(?:\.\d+)?)\s+(?P<cmd>\S.*?)\s*$")
_MAX_ROWS = 20


class RayMemory:
    """Feed the lines GD310 sees; ``summary`` says what the node's memory held."""

    def __init__(self) -> None:
        self.node: dict[str, str] = {}
        self.rows: list[tuple[float, str]] = []
        self._table = False

    def feed(self, line: LogLine) -> None:
        text = line.text
        if "Memory on the node" in text:
            m = _NODE.search(text)
            if m:
                self.node = {k: v for k, v in m.groupdict().items() if v}
                t = _TASK.search(text)
                if t:
                    self.node["task"] = t.group("task")
            return
        if "MEM(GB)" in text and "PID" in text:
            self._table, self.rows = True, []
            return
        if self._table and len(self.rows) < _MAX_ROWS:
            m = _ROW.match(text)
            if m:
                self.rows.append((float(m.group("gb")), m.group("cmd")))
            else:
                self._table = False

    def summary(self) -> tuple[str, str] | None:
        """(what the message says, the fix line) from the node figures and the table, or None without them."""
        if not self.node and not self.rows:
            return None
        said = []
        if self.node.get("used") and self.node.get("total"):
            thr = f", over Ray's threshold {self.node['thr']}" if self.node.get("thr") else ""
            said.append(f"the node used {self.node['used']} GB of {self.node['total']} GB (read){thr}")
        if not self.rows:
            return ("Ray's message: " + "; ".join(said) + ".", "")
        by_cmd = Counter()
        gb: dict[str, float] = {}
        for size, cmd in self.rows:
            name = cmd.split()[0] if cmd.startswith("ray::") else cmd[:80]
            by_cmd[name] += 1
            gb[name] = gb.get(name, 0.0) + size
        top, count = max(by_cmd.items(), key=lambda kv: gb[kv[0]])
        total = sum(s for s, _ in self.rows)
        share = gb[top] / total if total else 0
        each = gb[top] / count
        part = "nearly all" if share >= 0.995 else f"{share:.0%}"
        said.append(f"its table of the biggest users is led by {count} x {top} at about {each:.0f} GB each "
                    f"({gb[top]:.0f} GB, {part} of the listed memory; read)")
        fix = (f"Cut what {top} holds in host memory: its {count} process(es) hold {part} of the memory Ray listed. "
               f"For rollout or generation workers that is the batch of sequences generated at once (fewer prompts or samples "
               f"per step, shorter responses) and any weights or optimizer states offloaded to CPU; or give the "
               f"node more memory.")
        return ("Ray's message: " + "; ".join(said) + ".", fix)
