"""GD962: argparse's usage block with neither its error line nor the help groups after it: the parser refused the
command line (ArgumentParser.error prints the usage, then `<prog>: error: ...`, exit 2) and the paste stops before
the line that says what it refused."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule, evidence_of
from ...signals import LogLine

# "usage: rlhf.py [-h] [--model MODEL] ...", "usage: vllm [-h] [-v]", "usage: accelerate <command> [<args>]",
# "usage: torchrun [-h] ...": the program, then an option group, a placeholder or a subcommand set (not "GPU usage: 80%")
_USAGE = lazyre.compile(r"^\W{0,4}usage: (?P<prog>[\w./-]+) (?=[\[<{])")
# argparse's error line, under any program name (a parser of a subcommand prints "prog sub: error:")
_ERROR = lazyre.compile(r"(?:^|\s)[\w./ -]*: error: ")
# the groups of a help text (Python 3.10 renamed "optional arguments:" to "options:")
_HELP = lazyre.compile(r"^\W{0,4}(?:positional arguments|optional arguments|options|subcommands|commands):\s*$")


class UsageWithoutError(Rule):
    """The first usage block whose error line and help groups are both absent."""

    kinds = frozenset({LogLine})
    literals = ("usage: ", ": error: ", "arguments:", "options:", "commands:")
    idle_silent = True   # fed nothing: no usage line (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.usage: LogLine | None = None
        self.prog = ""
        self.answered = False   # its error line or its help groups came

    def feed(self, signal: Any) -> None:
        line: LogLine = signal
        if self.usage is None:
            m = _USAGE.search(line.text)
            if m:
                self.usage, self.prog = line, m.group("prog")
        elif not self.answered and (_ERROR.search(line.text) or _HELP.search(line.text)):
            self.answered = True

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.usage is None or self.answered:
            return []
        prog = self.prog
        msg = (f"`{prog}` printed its argument parser's usage (line {self.usage.where.line}) and nothing of a help text "
               f"after it: argparse prints the usage alone only when it refuses the command line, right before the "
               f"line `{prog}: error: ...` and an exit with code 2, so the program never started. That line, which "
               f"names the refused flag or value, is not in the excerpt.")
        fix = [f"Find the line right after the usage block (`{prog}: error: ...`) in the full output: it names what "
               f"was refused (an unrecognized argument, an invalid choice or value, a missing required argument).",
               f"Compare the command's flags with `{prog} --help` of the installed release: a flag of another release "
               f"or of another framework is the usual cause."]
        return [self.make(message=msg, fix=fix, evidence=(evidence_of(self.usage),), seq=self.usage.seq,
                          confidence="likely")]
