"""GD325: a run stopped by hand (Ctrl-C) while the process in the paste was only waiting for a child process it had
started: the launcher's stack (swift's CLI, accelerate's or DeepSpeed's launcher, any ``subprocess.run``) says where
the launcher sat, not where the training was. People press Ctrl-C on a run that stopped making progress, so the
reading is a hang, at `possible`, with what to take from the training processes next time.

The stop is proven by the stack itself when its exception line is cut: CPython's ``Popen.wait`` and
``Popen.communicate`` run ``self._wait(timeout=sigint_timeout)`` only inside their ``except KeyboardInterrupt:``
handler (Lib/subprocess.py since 3.7, bpo-25942: the first ^C waits briefly for the child, then re-raises), so a
frame at that line was handling a KeyboardInterrupt. Pure: the session's exceptions and cut stacks in, a finding out.
"""
from __future__ import annotations

from dataclasses import replace

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import Frame
from .interrupted import _AFTER_CTRL_C, in_subprocess_wait
from .prose import hang_words, prose_lines

_SIGINT_WAIT = lazyre.compile(r"\b_wait\(timeout=sigint_timeout\)")
# the launchers whose child is the training (the frame that started the wait, outermost first in the message)
_LAUNCHERS: tuple[tuple[str, str], ...] = (
    ("swift/cli/main.py", "ms-swift's CLI (`swift`)"),
    ("accelerate/commands/launch.py", "accelerate's launcher"),
    ("deepspeed/launcher/", "DeepSpeed's launcher"),
    ("llamafactory/cli.py", "LLaMA-Factory's CLI (`llamafactory-cli`)"),
    ("torch/distributed/run.py", "torchrun"),
)


def _launcher(frames: tuple[Frame, ...]) -> str:
    for f in frames:
        path = f.path.replace("\\", "/")
        for key, name in _LAUNCHERS:
            if key in path:
                return name
    return "the process in the paste"


def _stopped(ctx: RunState) -> tuple[int, tuple[Frame, ...], Evidence, bool] | None:
    """(the stack's seq, its frames, the evidence, proven by the handler's frame) of the stack that ends
    the log, when it is a wait for a child process stopped by Ctrl-C."""
    stops = [e for e in ctx.exceptions if e.short_type == "KeyboardInterrupt" and e.frames]
    last_exc = stops[-1] if stops else None
    cut = max(ctx.open_tracebacks, key=lambda t: (t[0].seq, len(t[1]))) if ctx.open_tracebacks else None
    if cut is not None and (last_exc is None or cut[0].seq > last_exc.seq):
        line, frames = cut
        proven = any(f.path.replace("\\", "/").endswith("/subprocess.py") and f.code and _SIGINT_WAIT.search(f.code)
                     for f in frames)
        if not proven or not in_subprocess_wait(frames):
            return None
        after = line.seq
        found = (line.seq, frames, Evidence(line.where.path, line.where.line, line.raw), True)
    elif last_exc is not None and in_subprocess_wait(last_exc.frames):
        after = last_exc.seq
        found = (last_exc.seq, last_exc.frames, Evidence(last_exc.where.path, last_exc.where.line, last_exc.raw), False)
    else:
        return None
    if any(e.seq > after and e.short_type not in _AFTER_CTRL_C for e in ctx.exceptions):
        return None
    return found


class StoppedWhileWaitingForChild(Rule):
    kinds: frozenset[type] = frozenset()  # reads the session's exceptions and cut stacks at the end

    def finish(self, ctx: RunState) -> list[Finding]:
        if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
            return []
        if any(f.category.startswith("hang-") and f.severity >= Severity.warning for f in ctx.findings):
            return []  # the run's own lines placed the hang (GD320/GD321 read a whole log and name the interrupt)
        found = _stopped(ctx)
        if found is None:
            return []
        seq, frames, evidence, proven = found
        who = _launcher(frames)
        inner = frames[-1]
        how = (" Its stack runs through `self._wait(timeout=sigint_timeout)`, which CPython's subprocess runs only "
               "while handling a KeyboardInterrupt: that proves the Ctrl-C, though the paste lost the exception line."
               if proven else "")
        words = hang_words(prose_lines(ctx.last_tail()))
        steps = ctx.metrics_steps
        if steps:
            category, phase = "hang-mid-training", f"{steps} training step(s) were logged before it"
        elif words is not None:
            category = words[0]
            phase = f"the words of the paste say it was stuck (`{words[1].text.strip()[:80]}`)"
        elif ctx.whole_log():
            category, phase = "hang-at-start", "no training step was logged before it"
        else:
            category, phase = "hang-mid-training", "the paste shows no step, so how far the training got is not in it"
        msg = (f"The run was stopped by hand (Ctrl-C, KeyboardInterrupt) while {who} was waiting for the training "
               f"process it had started as its child ({inner.path}:{inner.lineno} in {inner.func}).{how} This stack is the launcher's: it says where "
               f"the launcher sat, not where the training was; {phase}. A run is usually stopped this way when it "
               f"stops making progress, so the reading is a hang; if it was stopped on purpose, there is no failure "
               f"here.")
        fix = ["While it is stuck, take the stacks of the training processes, not of the launcher: "
               "`pstree -p <launcher pid>` lists them, `py-spy dump --pid <pid>` each (or run it under "
               "`grpo-doctor watch`, which takes them); paste those and the training log's last 200 lines."]
        alternatives = ("hang-at-start",) if category == "hang-mid-training" and not steps and words is None else ()
        evidence_lines = [evidence]
        if words is not None and category == words[0]:
            w = words[1]
            evidence_lines.append(Evidence(w.where.path, w.where.line, w.raw))
        f = self.make(message=msg, fix=fix, evidence=evidence_lines, severity=Severity.warning,
                      seq=seq, alternatives=alternatives)
        return [replace(f, category=category)]


__all__ = ["StoppedWhileWaitingForChild"]
