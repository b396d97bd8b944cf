"""GD414: a line that ends a backslash-continued command too early: a commented-out flag line (bash takes the trailing
backslash as part of the comment), or a flag line whose trailing backslash is missing; the flags below it are never
passed."""
from __future__ import annotations

import re
from dataclasses import replace

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import LogLine

_CONT_COMMENT = lazyre.compile(r"\\[ \t]*\r?\n([ \t]*#[^\n]*)\r?\n")
# a flag line of a continued command without its backslash, followed by more flag lines
_NO_CONT = lazyre.compile(r"\\[ \t]*\r?\n([ \t]*-[^\n\\]*[^\s\\])[ \t]*\r?\n(?=[ \t]*--?\w)")


class CommentBreaksCommand(Rule):
    """A ``# --flag \\`` line inside a backslash-continued command ends the command there: bash treats the rest
    of the line (the backslash included) as a comment, so every flag below it is never passed (dev-log 002)."""

    kinds = frozenset()

    def finish(self, ctx: RunState) -> list[Finding]:
        out: list[Finding] = []
        for text in ctx.run.command_texts:
            cuts = [(m, True) for m in _CONT_COMMENT.finditer(text)] + [(m, False) for m in _NO_CONT.finditer(text)]
            for m, commented in sorted(cuts, key=lambda c: c[0].start()):
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
                # quoted: the command's own spelling of each flag, whatever framework reads the report
                shown = ", ".join(f"`{d}`" for d in dropped[:12]) + (
                    f" and {len(dropped) - 12} more" if len(dropped) > 12 else "")
                why = ("bash ends the command at a comment (its trailing backslash is part of the comment)" if commented
                       else "the line has no trailing backslash, and bash ends the command there")
                msg = (f"The line `{comment[:80]}` sits inside a backslash-continued command: {why}, so the "
                       f"{len(dropped)} flag(s) after it never reached the program: {shown}. It ran with their "
                       f"defaults, and the shell then tried to run `{dropped[0]} ...` as a command of its own.")
                said = [f for f in dropped if _named(f, ctx)]
                # a pasted command is often re-wrapped by hand: a line without its backslash counts only when the run
                # shows the cut (bash ran the next flag as a command, or the error names a dropped flag)
                if not commented and not said and not _ran_as_command(dropped[0], ctx):
                    continue
                if said:
                    msg += (f" The error names {', '.join(f'`{x}`' for x in said[:3])}, dropped here: the value it "
                            f"reports is likely the default that flag would have changed.")
                fix = (["Delete the commented line (or move it below the command); to switch a flag off, remove the "
                        "whole line."] if commented else
                       [f"Put the missing ` \\` at the end of that line (the one that sets "
                        f"{comment.split()[0].lstrip('-')}), so the command goes on to the next line."])
                fix.append(f"Then check the run again: {shown} now take effect.")
                title = None if commented else "A line without its trailing backslash ends the multi-line command"
                out.append(self.make(message=msg, fix=fix, severity=Severity.warning, title=title))
                break
        if not out:
            ran = bash_ran_flag(ctx)
            if ran is not None:
                out.append(self._ran(ran, ctx))
        return out[:1]

    def _ran(self, ran: tuple[LogLine, str, str, str], ctx: RunState) -> Finding:
        """bash's report of a flag line run as a command of its own: the command above it ended one line early."""
        line, script, number, flag = ran
        before = _line_above(flag, ctx)
        where = f"line {number} of {script}" if script else f"line {number} of the script"
        msg = (f"bash ran `{flag} ...` ({where}) as a command of its own: the multi-line command above it ended on the "
               f"line before, so `{flag}` and every flag after it never reached the program, which ran with their "
               f"defaults. The program's own complaints about a missing or default value (an empty dataset, a model "
               f"path) follow from that.")
        if any("'\\r'" in ln.text for tail in ctx.tails.values() for ln in tail):
            msg += (" The program was given a `'\\r'` argument: the script has Windows (CRLF) line ends, so every "
                    "trailing backslash is followed by a CR and continues nothing.")
        elif before is not None:
            msg += f" The line above it in the paste, `{before.text.strip()[:120]}`, ends without ` \\`."
        fix = [(f"Put ` \\` at the end of `{before.text.strip()[:80]}`" if before is not None else
                f"Put ` \\` at the end of the line above `{flag}` in the script")
               + " (nothing after the backslash: no space, no comment, and Unix line ends: a script saved with CRLF "
                 "ends every line with a CR after it; `sed -i 's/\\r$//' script.sh` removes them), then run it again.",
               "Check the program's argument dump (ms-swift's `args:` line, the trainer's printed arguments): the "
               "flags from that line on now show the values you set."]
        found = self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                          seq=line.seq, severity=Severity.error, title="A line of the launch script ran a flag as a "
                          "command: the multi-line command ended one line early")
        # above the program's own refusal of a missing value (GD434's empty dataset, priority 70): that follows from it
        return replace(found, priority=max(found.priority, 75))


def _named(flag: str, ctx: RunState) -> bool:
    """Whether an exception of the run names this flag (without its dashes) as a word."""
    name = flag.lstrip("-")
    if len(name) <= 2:
        return False
    word = lazyre.compile(rf"\b{re.escape(name)}\b")
    # the message and the lines printed under it (a list of refused values)
    return any(word.search(e.message) or any(word.search(ln.text) for ln in ctx.lines_after(e.where.path, e.seq, 8))
               for e in ctx.exceptions)


# bash's "script.sh: line 7: --model_id_or_path: command not found" (also "bash: line 7: ..." and without the script)
_BASH_RAN = lazyre.compile(r"(?:^|\s)(?:(?P<script>[\w./-]+): )?line (?P<n>\d+): (?P<flag>--?[A-Za-z][\w.-]*): command not found")


def bash_ran_flag(ctx: RunState) -> tuple[LogLine, str, str, str] | None:
    """(line, script, line number, flag) of bash's report of a flag line run as a command, or None."""
    for tail in ctx.tails.values():
        for ln in tail:
            if "command not found" in ln.text:
                m = _BASH_RAN.search(ln.text)
                if m:
                    script = m.group("script") or ""
                    return ln, "" if script == "bash" else script, m.group("n"), m.group("flag")
    return None


def _line_above(flag: str, ctx: RunState) -> LogLine | None:
    """The pasted script's flag line just above the line that starts with ``flag``, when it lacks its backslash."""
    for tail in ctx.tails.values():
        lines = list(tail)
        for above, ln in zip(lines, lines[1:]):
            if ln.text.strip().startswith(flag + " ") or ln.text.strip() == flag:
                t = above.text.rstrip()
                if t.strip().startswith("-") and not t.endswith("\\"):
                    return above
    return None


def _ran_as_command(flag: str, ctx: RunState) -> bool:
    """bash's own report of running the line after the cut: ``line 12: --num_train_epochs: command not found``."""
    return any(flag in ln.text and "command not found" in ln.text for tail in ctx.tails.values() for ln in tail)
