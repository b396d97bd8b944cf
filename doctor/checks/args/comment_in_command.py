"""GD414: a commented-out flag line inside a backslash-continued command cuts the command there."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule

_CONT_COMMENT = lazyre.compile(r"\\[ \t]*\r?\n([ \t]*#[^\n]*)\r?\n")


class CommentBreaksCommand(Rule):
    """A ``# --flag \\`` line inside a backslash-continued command ends the command there: bash treats the rest
    of the line (the backslash included) as a comment, so every flag below it is never passed (dev-log 002)."""

    kinds = frozenset()

    def finish(self, ctx: RunState) -> list[Finding]:
        out: list[Finding] = []
        for text in ctx.run.command_texts:
            for m in _CONT_COMMENT.finditer(text):
                comment = m.group(1).strip()
                dropped: list[str] = []
                for line in text[m.end():].splitlines():
                    t = line.strip()
                    if not t:
                        break
                    if t.startswith("#"):
                        continue
                    if not t.startswith("-"):
                        break
                    dropped += [tok.split("=", 1)[0] for tok in t.rstrip("\\").split() if tok.startswith("--")]
                if not dropped:
                    continue
                shown = ", ".join(dropped[:12]) + (f" and {len(dropped) - 12} more" if len(dropped) > 12 else "")
                msg = (f"The line `{comment[:80]}` sits inside a backslash-continued command. bash ends the command "
                       f"at a comment (its trailing backslash is part of the comment), so the {len(dropped)} flag(s) "
                       f"after it never reached swift: {shown}. swift ran with their defaults, and the shell then "
                       f"tried to run `{dropped[0]} ...` as a command of its own.")
                fix = ["Delete the commented line (or move it below the command); to switch a flag off, remove the "
                       "whole line.",
                       f"Then check the run again: {shown} now take effect."]
                out.append(self.make(message=msg, fix=fix, severity=Severity.warning))
                break
        return out[:1]
