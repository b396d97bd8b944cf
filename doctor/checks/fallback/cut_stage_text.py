"""What GD999 says of a traceback cut before its exception line when its stage is known (doctor/classify/
cut_stage.py, doctor/data/cut_stages.toml): "<stage> failed; the exception is not in the excerpt", the frame that
names the stage, what usually fails there, and what to paste next. The stage's candidate category is the finding's
alternative, or its reading when the stage (or the stage with one line of the log) leaves one cause. Pure: the
session's state in, words out."""
from __future__ import annotations

from dataclasses import dataclass

from ... import lazyre
from ...classify.cut_stage import Stage, load, stage_of
from ...engine.state import RunState
from ...signals import Frame, LogLine
from ..hang._progress import PROGRESS_BAR
from ..hang.endings import plain
from .exceptions import describe_frame, tail_before

_HEADER = "Traceback (most recent call last)"
_EPOCHS = lazyre.compile(r"(\d+)\s*/\s*(\d+)")
_TRAINING_BAR = lazyre.compile(r"(?i)\b(?:train|epoch)")


@dataclass(frozen=True)
class CutStage:
    stage: Stage
    frame: Frame | None          # the frame that names the stage; None: read from the stack's position
    bar: LogLine | None          # the finished training bar the stack follows (position stages)
    why: str                     # sentences for the message
    fix: list[str]               # what to paste next, then what to check
    title: str
    category: str | None         # the reading when the stage leaves one cause, else None (the rule's own)
    alternatives: tuple[str, ...]


# a frame line of a Python traceback, its rank prefix already taken off
_FRAME_LINE = lazyre.compile(r'\s*File "[^"]+", line \d+')


def _before(ctx: RunState, line: LogLine) -> list[LogLine]:
    """The log's lines before the stack's header (its tail: the last lines kept of that input); a stack pasted
    without its header (an issue whose body starts at a frame): the lines above its first frame."""
    tail = tail_before(ctx.tails, line)
    start = next((i for i in range(len(tail) - 1, -1, -1) if _HEADER in tail[i].text), None)
    if start is not None:
        return tail[:start]
    first = next((i for i, t in enumerate(tail) if _FRAME_LINE.match(t.text)), None)
    return tail[:first] if first is not None else []


# a logger's error record (logging's ERROR / CRITICAL level, glog's E-lines) or a program's own "Error: ..." line
# datasets' loaders log the exception they re-raise without a level word when the logger's format has none:
# "Failed to load JSON from file '...' with error <class 'pyarrow.lib.ArrowInvalid'>: ..." (packaged_modules/json)
_ERROR_RECORD = lazyre.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b|^E\d{4} \d\d:\d\d|^(?:error|Error)(?: [^:]{0,60})?:\s*\S|"
                               r"\bwith error <class '[\w.]+'>: ")
# a warning that something could not be done: code that catches an error, logs it as a warning and goes on with
# nothing (a loader returning None) fails a few lines later on what is missing
_FAILED_WARNING = lazyre.compile(r"\bWARN(?:ING)?\b.*?\b(?:unable to|failed to|could not|cannot|can't) "
                                 r"(?:load|import|find|open|read|parse|resolve)\b")


def error_record_before(ctx: RunState, line: LogLine) -> LogLine | None:
    """An error record among the last lines printed before the cut stack's header: a logger that caught the exception
    logs what failed, then the traceback; with the stack's last line cut, that record names the failure."""
    before = [ln for ln in _before(ctx, line) if plain(ln.text)]
    for ln in reversed(before[-6:]):
        text = plain(ln.text)
        if _ERROR_RECORD.search(text) and len(text) > 12 and "Traceback" not in text:
            return ln
    return None


def failed_warning_before(ctx: RunState, line: LogLine) -> LogLine | None:
    """The last line before the cut stack's header when it is a warning that something could not be loaded, imported
    or found: what failed first, the stack being where the run fell over what was missing."""
    before = [ln for ln in _before(ctx, line) if plain(ln.text)]
    for ln in reversed(before[-3:]):
        if "Traceback" in ln.text:
            continue
        return ln if _FAILED_WARNING.search(plain(ln.text)) else None
    return None


def final_bar(before: list[LogLine]) -> LogLine | None:
    """The line right before the stack (blank lines and bare actor prefixes skipped) when it is a training bar at
    its total in its last epoch: `Train epoch [3/3]: 100%|...| 8/8`, ms-swift's `Train: 100%|...| 500/500`."""
    for ln in reversed(before):
        text = plain(ln.text)
        if not text:
            continue
        m = PROGRESS_BAR.match(text)
        if m is None or not _TRAINING_BAR.search(m.group("desc")):
            return None
        k, n = int(m.group("k")), int(m.group("n"))
        e = _EPOCHS.search(m.group("desc"))
        if k != n or k == 0 or (e is not None and e.group(1) != e.group(2)):
            return None
        return ln
    return None


def _server_flags(ctx: RunState) -> list[str]:
    """The run's settings that configure a vLLM rollout server (trl GRPOConfig, ms-swift's rollout arguments), by
    their neutral names (doctor/swift/terms.py words a flag in the framework's own terms)."""
    a = ctx.run.args
    flags = [k for k in sorted(a) if k.startswith("vllm_server_")]
    if str(a.get("vllm_mode") or "").lower() == "server":
        flags.insert(0, "vllm_mode server")
    if str(a.get("use_vllm") or "").lower() in ("true", "1") and (flags or "vllm_mode" not in a):
        flags.insert(0, "use_vllm")
    return flags


# the requirement a version check was called with, in the statement a frame prints: transformers' utils/versions.py
# require_version(requirement, hint) and LLaMA-Factory's check_version(requirement) take it as their first argument
_REQUIREMENT = lazyre.compile(r"\b(?:require_version|require_version_core|check_version)\(\s*f?[\"']"
                              r"([A-Za-z][\w.\-]*(?:\[[\w,]+\])?\s*[<>=!~][^\"'{}]{0,80})[\"']")


def _requirement(frames: tuple[Frame, ...]) -> tuple[str, Frame] | None:
    """The innermost version check's requirement read from the stack's own statements, with its frame."""
    for fr in reversed(frames):
        m = _REQUIREMENT.search(fr.code or "")
        if m is not None:
            return m.group(1).strip(), fr
    return None


def _paste(last: Frame, extra: str) -> str:
    where = f'File "{last.path}", line {last.lineno}, in {last.func}' if last.lineno else f"in {last.func}"
    return (f"Paste next: the lines after `{where}` in the full log, down to its last `SomeError: message` line"
            + (f", {extra}" if extra else "") + ".")


def read(ctx: RunState, line: LogLine, frames: tuple[Frame, ...]) -> CutStage | None:
    """The stage of a cut traceback, with its words, or None when neither its frames nor its place name one."""
    from ..memory.cut_traceback import with_executed_method
    before = _before(ctx, line)
    upto = tail_before(ctx.tails, line)
    got = stage_of(with_executed_method(frames, upto))  # vLLM's `Error executing method <name>` names the stage
    bar = None
    if got is None:
        bar = final_bar(before)
        stage = next((s for s in load() if s.position == "after-final-bar"), None) if bar is not None else None
        if stage is None:
            return None
        fr = None
    else:
        stage, fr = got
    last = frames[-1]
    name = stage.stage
    if fr is not None and all(fr is not x for x in frames):
        where = f"The traceback stops in this step ({fr.func}, the method vLLM's `Error executing method` line names)"
    elif fr is not None:
        where = "The traceback stops in this step" + ("" if fr is last else f" ({describe_frame(fr)})")
    elif bar is not None:
        where = (f"The stack starts right after the training bar reached its total in its last epoch (line "
                 f"{bar.where.line}: `{plain(bar.text)[:80]}`)")
    else:  # pragma: no cover - a stage is read from a frame or from the bar
        return None
    why = [f"{where}: the code there {stage.does}.",
           "What commonly fails at this step: " + "; ".join(f"({i}) {u}" for i, u in enumerate(stage.usual, 1)) + "."]
    candidate = stage.category
    flags = _server_flags(ctx) if stage.server else []
    if flags:
        why.append(stage.server.replace("{flags}", ", ".join(flags)))
        candidate = stage.server_category or candidate
    reading = None
    if candidate and stage.decides:
        reading = candidate
    elif candidate and stage.clear is not None:
        # the stack's own header too: IPython's names the exception ("ValueError    Traceback (most recent call last)")
        header = [t.text for t in upto if _HEADER in t.text][-1:]
        texts = [f.code for f in frames if f.code] + [t.text for t in before] + header
        hit = next((t for t in texts if stage.clear.search(t)), None)
        if hit is not None:
            reading = candidate
            why.append(f"`{hit.strip()[:120]}` (in the log or the stack) leaves one reading of this stage: "
                       f"{stage.usual[0].split(':', 1)[0]}.")
    title = f"{name[:1].upper()}{name[1:]} failed; the exception is not in the excerpt"
    # what to check in this stage first; the paste that would settle it last
    fix = list(stage.fix) + [_paste(last, stage.paste)]
    req = _requirement(frames) if stage.id == "version-check" else None
    if req is not None:
        # the range itself, read from the stack: the check's generic wording would leave the user to find it
        fix[0] = (f"Install a release inside the range the check names: `pip install '{req[0]}'` (read from "
                  f"{describe_frame(req[1])}), or the framework release that supports the installed one; "
                  f"LLaMA-Factory also runs with DISABLE_VERSION_CHECK=1, at your own risk.")
    alts = (candidate,) if candidate and candidate != reading else ()
    return CutStage(stage, fr, bar, " ".join(why), fix, title, reading, alts)
