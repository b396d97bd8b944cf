"""GD325: a run stopped by hand (Ctrl-C: KeyboardInterrupt) with no error of its own, read from the stack the stop
printed. People press Ctrl-C on a run that stopped making progress, so the reading is a hang, at `possible`, placed by
the stack: the training process's own stack says where it sat (a collective, generation, a reward function, a save);
a launcher's stack (swift's CLI, accelerate's or DeepSpeed's launcher, any ``subprocess.run``) says only that it
waited for its child, not where the training was.

The stop is proven by the stack itself when its exception line is cut: CPython's ``Popen.wait`` and
``Popen.communicate`` run ``self._wait(timeout=sigint_timeout)`` only inside their ``except KeyboardInterrupt:``
handler (Lib/subprocess.py since 3.7, bpo-25942: the first ^C waits briefly for the child, then re-raises), so a
frame at that line was handling a KeyboardInterrupt. Pure: the session's exceptions and cut stacks in, a finding out.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ... import lazyre
from ...classify.component import norm
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import Frame, LogLine
from ._progress import _CLASS_TEXT, classify_frames
from .interrupted import _AFTER_CTRL_C, STARTUP_WHERE, in_subprocess_wait, startup_phase
from .prose import bar_mid_way, hang_words, prose_lines, start_said, stopped_by_hand_said

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
        path = norm(f.path)
        for key, name in _LAUNCHERS:
            if key in path:
                return name
    return "the process in the paste"


# frames of a training loop (transformers' Trainer and what subclasses it: trl, ms-swift; verl's and OpenRLHF's fit)
_TRAINING = ("_inner_training_loop", "training_step", "compute_loss", "_prepare_inputs", "_generate_and_score",
             "_generate", " fit", " train_step", " make_experience")
# what to do per place the stack shows (frame classes of doctor/checks/hang/_progress.py)
_PLACE_FIX = {
    "collective": "A rank waiting in a collective waits for a rank that is elsewhere: take `py-spy dump --pid <pid>` "
                  "of every rank while it is stuck (the one not in the collective is the cause), and set "
                  "NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL for the next run.",
    "reward": "A reward function that does not return (a remote judge, a sandbox, a lock) stops every step: time one "
              "call on a few completions by hand and give its network calls a timeout.",
}


@dataclass(frozen=True)
class _Stop:
    seq: int
    frames: tuple[Frame, ...]
    evidence: Evidence
    proven: bool       # read from the handler's frame of a cut stack (no KeyboardInterrupt line)
    launcher: bool     # the stack of a process waiting for its child


def _stopped(ctx: RunState) -> _Stop | None:
    """The Ctrl-C that ends the log, when nothing but its consequences follows it."""
    stops = [e for e in ctx.exceptions if e.short_type == "KeyboardInterrupt" and e.frames]
    # the training process's own interrupt says where the training was; a launcher's, printed after it, does not
    own = [e for e in stops if not in_subprocess_wait(e.frames)]
    last_exc = (own or stops)[-1] if stops else None
    cut = max(ctx.open_tracebacks, key=lambda t: (t[0].seq, len(t[1]))) if ctx.open_tracebacks else None
    if cut is not None and (last_exc is None or cut[0].seq > last_exc.seq):
        line, frames = cut
        proven = any(norm(f.path).endswith("/subprocess.py") and f.code and _SIGINT_WAIT.search(f.code)
                     for f in frames)
        if proven and in_subprocess_wait(frames):
            found = _Stop(line.seq, frames, Evidence(line.where.path, line.where.line, line.raw), True, True)
        elif stopped_by_hand_said(ctx.last_tail()) is not None:
            # the paste's words say its author stopped the stuck run: the stack is where it sat
            found = _Stop(line.seq, frames, Evidence(line.where.path, line.where.line, line.raw), False,
                          in_subprocess_wait(frames))
        else:
            return None
    elif last_exc is not None:
        found = _Stop(last_exc.seq, last_exc.frames, Evidence(last_exc.where.path, last_exc.where.line, last_exc.raw),
                      False, in_subprocess_wait(last_exc.frames))
    else:
        return None
    after = max(found.seq, *(e.seq for e in stops)) if stops else found.seq
    if any(e.seq > after and e.short_type not in _AFTER_CTRL_C for e in ctx.exceptions):
        return None
    return found


def _place(ctx: RunState, stop: _Stop, words: tuple[str, LogLine] | None) -> tuple[str, str, tuple[str, ...]]:
    """(category, where the run was, alternatives); ``words``: what the paste's prose says of a hang."""
    steps = ctx.metrics_steps
    hays = [f"{f.path} {f.func}" for f in stop.frames]
    if steps:
        return "hang-mid-training", f"training steps were logged before it ({steps} metric row(s))", ()
    if not stop.launcher:
        phase = startup_phase(stop.frames)
        if phase:
            return "hang-at-start", f"its stack shows it {STARTUP_WHERE[phase]}", ()
        if any(k in h for h in hays for k in _TRAINING):
            if words is not None and words[0] == "hang-at-start":  # "stuck at 0%": the first step never finished
                return ("hang-at-start", f"its stack is in the training loop and the words of the paste say no step "
                        f"finished (`{words[1].text.strip()[:80]}`)", ())
            return "hang-mid-training", "its stack is in the training loop", ()
    if words is not None:
        tail = ctx.last_tail()
        pace = bar_mid_way(tail) if words[0] == "hang-at-start" and not start_said(prose_lines(tail)) else None
        if pace is not None:
            # the words place no stop, the bar does: steps ran at a pace before it ("281/20820 [03:48, 1.28it/s]")
            return ("hang-mid-training", f"the paste's progress bar stopped at {pace.done} of {pace.total} "
                    f"(`{pace.line.text.strip()[:80]}`) and its words say it was stuck", ())
        return words[0], f"the words of the paste say it was stuck (`{words[1].text.strip()[:80]}`)", ()
    if ctx.whole_log():
        return "hang-at-start", "no training step was logged before it", ()
    return ("hang-mid-training", "the paste shows no step, so how far the training got is not in it",
            ("hang-at-start",))


class StoppedByHand(Rule):
    kinds: frozenset[type] = frozenset()  # reads the session's exceptions and cut stacks at the end

    def finish(self, ctx: RunState) -> list[Finding]:
        if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
            return []
        if any(f.category.startswith("hang-") and f.severity >= Severity.warning for f in ctx.findings):
            return []  # the run's own lines placed the hang (GD320/GD321 read a whole log and name the interrupt)
        stop = _stopped(ctx)
        if stop is None:
            return []
        words = hang_words(prose_lines(ctx.last_tail()))
        category, where, alternatives = _place(ctx, stop, words)
        inner = stop.frames[-1]
        at = f"{inner.path}:{inner.lineno} in {inner.func}"
        fix = []
        if stop.launcher:
            proof = (" Its stack runs through `self._wait(timeout=sigint_timeout)`, which CPython's subprocess runs "
                     "only while handling a KeyboardInterrupt: that proves the Ctrl-C, though the paste lost the "
                     "exception line." if stop.proven else "")
            msg = (f"The run was stopped by hand (Ctrl-C, KeyboardInterrupt) while {_launcher(stop.frames)} was "
                   f"waiting for the training process it had started as its child ({at}).{proof} This stack is the "
                   f"launcher's: it says where the launcher sat, not where the training was; {where}.")
            fix.append("While it is stuck, take the stacks of the training processes, not of the launcher: "
                       "`pstree -p <launcher pid>` lists them, `py-spy dump --pid <pid>` each (or run it under "
                       "`grpo-doctor watch`, which takes them); paste those and the training log's last 200 lines.")
        else:
            cls = classify_frames([(f.func, f.path, f.lineno) for f in reversed(stop.frames)])
            sat = f" {_CLASS_TEXT[cls]}" if cls else ""
            msg = (f"The run was stopped by hand (Ctrl-C, KeyboardInterrupt) with no error before it; its stack shows "
                   f"it{sat} at {at}, and {where}.")
            if cls in _PLACE_FIX:
                fix.append(_PLACE_FIX[cls])
            fix.append("While it is stuck, take `py-spy dump --pid <pid>` of every training process (or run it under "
                       "`grpo-doctor watch`, which takes them) and paste those with the log's last 200 lines.")
        msg += (" A run is usually stopped this way when it stops making progress, so the reading is a hang; if it "
                "was stopped on purpose, there is no failure here.")
        evidence = [stop.evidence]
        if words is not None and words[0] == category:
            evidence.append(Evidence(words[1].where.path, words[1].where.line, words[1].raw))
        title = ("Stopped by hand while the launcher waited for the training process" if stop.launcher else
                 "Stopped by hand (Ctrl-C) with no error before it")
        f = self.make(message=msg, fix=fix, evidence=evidence, severity=Severity.warning, seq=stop.seq,
                      alternatives=alternatives, title=title)
        return [replace(f, category=category)]


__all__ = ["StoppedByHand"]
