"""GD915: the shell found no program by the launch command's name; the fix names the package that installs it and the
interpreter form of the same launch (doctor/swift/entry_points.py)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.entry_points import ENTRY_POINTS, SWIFT_SUBCOMMANDS

# the wording of cmd.exe and PowerShell (and what a UTF-8 page leaves of cmd.exe's translated message)
_WINDOWS = ("recognized as", "不是内部", "cmdlet", "\ufffd")


def launcher_missing_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    cmd = next((c for h in hits for c in (h.groups.get("cmd"), h.groups.get("cmd2")) if c), "")
    if not cmd:
        return None
    windows = any(w in h.evidence.text for h in hits for w in _WINDOWS)
    bindir = "Scripts\\ folder" if windows else "bin/ folder"
    which = f"where {cmd}" if windows else f"which -a {cmd}"
    if cmd in SWIFT_SUBCOMMANDS:
        return Diagnosis(
            message=f"The shell found no program named `{cmd}`: `{cmd}` is an ms-swift subcommand, run as "
                    f"`swift {cmd} ...` (swift/cli/main.py routes it); nothing of the run started.",
            fix=("Put ms-swift's launcher `swift` in front of the subcommand; the flags stay as they are.",),
            title="An ms-swift subcommand was run without `swift`", category="argument-error-other",
            verify=f"the launch line starts with `swift {cmd}` and the run prints its argument dump")
    ep = ENTRY_POINTS.get(cmd)
    if ep is None:
        return Diagnosis(
            message=f"The shell found no program named `{cmd}` on PATH; nothing of the run started. The package that "
                    f"provides it is not installed in the active environment, or its {bindir} is not on PATH.",
            fix=(f"Install the package that provides `{cmd}` into the environment that runs the launch, then check "
                 f"with `{which}`.",),
            verify=f"`{which}` prints a path inside the environment that runs the launch")
    said = (f"The shell found no program named `{cmd}`; nothing of the run started. `{cmd}` is the console script of "
            f"{ep.package}: it is not installed in the environment this shell uses, it went into another Python (check "
            f"`{which}` against `python -m pip show {ep.package}`), or the environment's {bindir} is not on PATH.")
    fix = [f"{ep.install}, with the python that will run the training (`python -m pip ...` makes sure of it)."]
    if ep.module:
        fix.append(f"Or run the same program through that interpreter: `python -m {ep.module} <the same arguments>`.")
    return Diagnosis(message=said, fix=tuple(fix), verify=f"`{which}` prints a path inside the environment whose "
                                                         f"python runs the training, and the launch prints its first "
                                                         f"log lines")
