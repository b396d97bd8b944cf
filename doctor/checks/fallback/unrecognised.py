"""GD999, the answer of last resort: a log that ends in a failure no rule knows still gets a finding that
quotes the first real exception and where it was raised. Never silence."""
from __future__ import annotations

from dataclasses import replace

from ...classify.component import component, deepest_library
from ...model import Evidence, Finding, Severity
from ...rules import FinishContext, Rule
from ...signals import ExceptionInfo
from ...swift.framework import issues_of, of_run
from .exceptions import describe_frame, first_real, is_library
from .structural import _versions, embedded_exceptions, verdict_of


class Unrecognised(Rule):
    kinds = frozenset({ExceptionInfo})

    def finish(self, ctx: FinishContext) -> list[Finding]:
        # consequences (NCCL timeouts, ChildFailedError...) do not explain the first real error
        if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
            return []
        if verdict_of(ctx) is not None:
            return []  # the structural rules (GD990-GD996) name a category
        explained = {e.text.split("]:", 1)[-1].strip() for f in ctx.findings for e in f.evidence}
        exc = first_real([e for e in ctx.exceptions if e.raw.split("]:", 1)[-1].strip() not in explained])
        if exc is not None:
            return [self._for_exception(exc, ctx)]
        if not ctx.open_tracebacks and not any(f.severity >= Severity.warning for f in ctx.findings):
            named = embedded_exceptions(ctx)
            if named:  # a pytest summary, a notebook header, markdown: the exception without its traceback
                f = self._for_exception(named[0], ctx)
                return [replace(f, severity=Severity.warning, message=f.message + " It is named in a line that is "
                                "not a traceback (a test summary, a notebook header, markdown): share the full "
                                "traceback for a surer diagnosis.")]
        if ctx.open_tracebacks:
            line, frames = ctx.open_tracebacks[0]
            last = frames[-1]
            msg = (f"The log ends inside a Python traceback, before its exception line (the paste or the file was "
                   f"cut). The last frame is {describe_frame(last)}.")
            user = [f for f in frames if not is_library(f.path)]
            fix = ["Find the line after this traceback in the full log (the `SomeError: message` line) and run "
                   "grpo-doctor on the whole file."]
            if user:
                fix.append(f"The last frame in your own code is {describe_frame(user[-1])}.")
            return [self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                              seq=line.seq, severity=Severity.warning,
                              title="Unrecognised failure: traceback cut before its exception")]
        return []

    def _for_exception(self, exc: ExceptionInfo, ctx: FinishContext) -> Finding:
        same = [e for e in ctx.exceptions if e.type == exc.type and e.message == exc.message]
        ranks = tuple(sorted({e.rank for e in same if e.rank is not None}))
        where = exc.raised_at
        text = f"{exc.type}: {exc.message}" if exc.message else exc.type
        msg = f"No rule recognises this failure. The first real exception is `{text}`"
        msg += f", raised at {describe_frame(where)}." if where else " (no stack frames in the log)."
        lib = deepest_library(exc.frames)
        if lib is not None:
            msg += f" The innermost library frame is in {component(lib.path)} ({describe_frame(lib)})."
        msg += _versions(exc, ctx)
        fix = []
        user = [f for f in exc.frames if not is_library(f.path)]
        if user and user[-1] is not where:
            fix.append(f"The last frame in your own code is {describe_frame(user[-1])}: start there.")
        elif where is not None and not is_library(where.path):
            fix.append(f"It was raised in your own code ({describe_frame(where)}): start there.")
        if ranks:
            fix.append(f"Raised on rank(s) {', '.join(map(str, ranks))}; other ranks' errors after it are consequences.")
        who = issues_of(of_run(ctx.run, ctx.exceptions, ctx.open_tracebacks, ctx.tails)[0])
        fix.append(f"Search the {who} issues for the message: \"{exc.message[:120] or exc.type}\".")
        fix.append("Share this report (grpo-doctor analyze --format markdown) when you ask for help.")
        return self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                         count=len(same), ranks=ranks, seq=exc.seq,
                         title=f"Unrecognised failure: {exc.short_type}")
