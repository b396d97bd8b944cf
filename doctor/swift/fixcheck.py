"""A computed fix, checked against the run that failed before anyone reads it (issue 29 point 2).

One checker for every rule, applied where findings are finished (doctor/engine/session.py): a fix must change the
outcome. A computed flag (``Finding.flags``) is dropped, with the fix sentences that propose it, when

- its value is the one the run already has (``--num_generations 8`` for a run with num_generations 8);
- the flag does not exist in the ms-swift that ran (doctor/swift/flags.py; an unknown version reads as a recent
  one, an inferred range as its newest release): the tuner flag is respelled for the version instead;
- it breaks the constraint its rule family applies: a batch flag must give whole groups of num_generations with the
  arithmetic of doctor/swift/batch.py (world x per_device_train_batch_size x steps_per_generation, or world x batch
  before ms-swift 3.4), checked only when the run's own values prove the current batch wrong (then the corrected
  one must be right; when they do not, what the run was is not fully known and nothing is claimed).

The fix text is read too: a sentence that proposes ``--flag V`` (``use --flag V``, ``--flag V or W``) where V is the
run's value loses that value, and the sentence goes when nothing else is left to propose. A value named as context
(``--flag V is ...``, ``now V``, ``from V``, ``keep --flag V``) is not a proposal.

Pure: no I/O, the run's configuration (doctor/sources/swiftconfig.py RunConfig) in, a Finding out.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .. import lazyre
from ..checks.args._swift_fields import RLHF_FIELDS_4_6
from ..model import Finding
from ..sources.swiftconfig import RunConfig
from ..values import as_int
from .flags import ADDED, REMOVED, REMOVED_IN, RENAMED, since
from .run import at_least, flag_in_version, inferred, tuner_flag, version_label
from .version import MajorMinor

# the flags of the batch arithmetic (swift-notes §1.1)
BATCH_FLAGS = frozenset({"num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
                         "steps_per_generation", "generation_batch_size"})

# a proposal in a fix sentence: --flag V, --flag V or W, --flag V/W, --flag=V (V a number, a bool or a word)
_VAL = r"[A-Za-z0-9_.+-]*[A-Za-z0-9]"
_PROPOSAL = lazyre.compile(r"--([a-z][a-z0-9_]*)(?:[ =])(" + _VAL + r"(?:(?: or |/)" + _VAL + r")*)")
_MORE = lazyre.compile(r"(?:\s+" + _VAL + r"(?![A-Za-z0-9_.+-]))*")
_MORE_NUMBERS = lazyre.compile(r"(?:\s+[0-9][0-9.e+-]*(?![A-Za-z0-9_.+-]))*")
# words before or after a ``--flag V`` that make it context rather than a proposal: the run's value named ("now V",
# "keep --flag V", "instead of --flag V", "delete `--flag V`", "with --flag V: ..."), or what it does ("--flag V
# leaves no room", "--flag V: CPU offload keeps ...")
_CONTEXT_BEFORE = lazyre.compile(r"(?:\b(?:keep|keeps|kept|keeping|current|currently|now|from|has|had|with|your|was|is|are|"
                             r"already|run's|run:|instead of|against|delete|deletes|drop|drops|remove|removes|without|"
                             r"replace|replaces|reserves|uses|using|says|gave|given|of|asked for|asks for|passes|passed)\s+`?|\+\s*)$",
                             re.I)
_CONTEXT_AFTER = lazyre.compile(r"^`?(?:\s*\([^()]*\))?(?::|\s*[=+]|\s+(?:is|was|are|were|already|alone|stays|leaves|overflows|"
                            r"means|reserves|keeps|makes|made|gave|as it is|instead|\(now|\(current|\(the current|"
                            r"\(as set|->|→|x\b|\*))", re.I)

# flags written side by side (``--model <base model> --load_args false``): one combination
_FLAG = lazyre.compile(r"--[a-z][a-z0-9_]*(?:[ =](?:<[^>]*>\S*|[^\s-]\S*))?")
_COMBO = lazyre.compile(_FLAG.pattern + r"(?:\s+" + _FLAG.pattern + r")+")


def _norm(value: Any) -> str | None:
    """A value as a comparable text: numbers by value, bools lower-case, lists joined; None for no value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        parts = [_norm(v) for v in value]
        return " ".join(p for p in parts if p is not None)
    text = str(value).strip().strip("'\"")
    low = text.lower()
    if low in ("true", "false"):
        return low
    try:
        f = float(text)
    except (ValueError, OverflowError):
        return text
    if math.isfinite(f) and f == int(f) and abs(f) < 1e18:
        return str(int(f))
    return repr(f)


def same(a: Any, b: Any) -> bool:
    """Do two values say the same setting (``8`` and ``"8"``, ``True`` and ``"true"``, ``0.9`` and ``"0.90"``)?"""
    na, nb = _norm(a), _norm(b)
    return na is not None and na == nb


def name_of(flag: str) -> str:
    return flag[2:].replace("-", "_") if flag.startswith("--") else flag


def current(run: RunConfig, name: str) -> Any:
    """The run's value of flag ``name`` (an environment variable by its own name), or None when not read."""
    if not name.startswith("--") and name.isupper():
        return run.env.get(name)
    key = name_of(name)
    return run.args.get(key)


def _mm(run: RunConfig) -> MajorMinor | None:
    span = inferred(run)
    return span[1] if span else run.swift_major_minor


def flag_for_version(run: RunConfig, name: str) -> tuple[str | None, str]:
    """The spelling of flag ``name`` in the ms-swift that ran, and why it differs: (name, "") when it exists as it
    is, (other, why) when that version spells it otherwise, (None, why) when that version has no such flag. An
    unknown version is a recent one (doctor/swift/flags.py), an inferred range its newest release."""
    if name in ("tuner_type", "train_type"):
        right = tuner_flag(run)
        return right, "" if right == name else f"the ms-swift of this run spells it --{right}"
    mm = _mm(run)
    gone = REMOVED_IN.get(name)
    if gone is not None and (mm is None or mm >= gone):
        if name in RENAMED:
            return RENAMED[name]
        return None, REMOVED.get(name, f"removed in ms-swift {gone[0]}.{gone[1]}")
    if not flag_in_version(run, name):
        first = since(name)
        return None, (f"--{name} exists from ms-swift {first[0]}.{first[1]}" if first else f"no --{name} there")
    return name, ""


def known_flag(run: RunConfig, name: str) -> tuple[str | None, str]:
    """A flag of the run's own launch, as the corrected command writes it: (name, "") when it stands, (other, why)
    when the version spells it otherwise or it is misspelt with one unambiguous nearest ms-swift argument,
    (None, why) when it is dropped (removed in that version, or known to no version and near to none).

    The argument list is ms-swift 4.6's (doctor/checks/args/_swift_fields.py, what the preflight checks a 4.x
    command against); a flag missing from it is kept for a 3.x run (3.x had arguments 4.6 dropped)."""
    key = name[3:] if name.startswith("no_") and name[3:] in RLHF_FIELDS_4_6 else name  # --no_<bool>
    mm = _mm(run)
    if key in RENAMED or key in REMOVED or key in ADDED:
        # a flag of some versions only: judged against the version that ran; with that version unknown, the run
        # itself is the evidence that its ms-swift took the flag (--vllm_device with --vllm_mode server: 3.5)
        return flag_for_version(run, name) if key == name and mm is not None else (name, "")
    if key in RLHF_FIELDS_4_6:
        return name, ""
    if (mm is not None and mm < (4, 0)) or (mm is None and run.major == 3):
        return name, ""  # a 3.x argument the 4.6 list does not hold: not ours to judge
    import difflib  # a flag no version knows only: not imported at every start of watch
    close = difflib.get_close_matches(key, RLHF_FIELDS_4_6, n=2, cutoff=0.8)
    if len(close) == 1 or (len(close) == 2 and difflib.SequenceMatcher(None, key, close[0]).ratio() >
                           difflib.SequenceMatcher(None, key, close[1]).ratio() + 0.05):
        return close[0], f"--{name} is not an argument of swift rlhf; the nearest one is --{close[0]}"
    return None, f"--{name} is not an argument of swift rlhf ({version_label(run)}) and is near to none"


def correct_launch(flags: dict[str, Any], run: RunConfig) -> tuple[dict[str, Any], list[str]]:
    """The run's launch flags with each misspelt, renamed or removed flag respelled or dropped (``known_flag``),
    and one note per change for the fix."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    for raw, value in flags.items():
        name = name_of(raw if raw.startswith("--") else "--" + raw)
        right, why = known_flag(run, name)
        if right is None:
            notes.append(f"The command drops --{name}: {why}.")
            continue
        if right != name:
            if right in flags or right in out:
                notes.append(f"The command drops --{name} ({why}; --{right} is already given).")
                continue
            notes.append(f"The command writes --{name} as --{right} ({why}).")
        out[right] = value
    return out, notes


# ------------------------------------------------------------------------------------- the batch constraint

def _batch_values(run: RunConfig, changes: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """(world, per-device batch, steps per generation, num_generations) of the run with ``changes`` applied; None
    when one of them is not known from the run."""
    def get(key: str) -> int | None:
        if key in changes:
            return as_int(changes[key], floats=True)
        return as_int(run.args.get(key), floats=True)

    n = run.world_size()  # unknown without a rank line or a launcher: the error's own n is not ours to guess
    b = get("per_device_train_batch_size")
    g = get("num_generations")
    spg, ga, gbs = get("steps_per_generation"), get("gradient_accumulation_steps"), get("generation_batch_size")
    if n is None or b is None or g is None or b <= 0 or g <= 0:
        return None
    if at_least(run, 3, 4) is False:
        return n, b, 1, g
    if spg is None and gbs is not None and gbs % (n * b) == 0:
        spg = gbs // (n * b)
    s = spg if spg is not None else ga if ga is not None else 1
    return n, b, s, g


def batch_ok(run: RunConfig, changes: dict[str, Any]) -> bool | None:
    """Whether the generation batch of the run with ``changes`` holds whole groups of num_generations; None when
    the run's values are not all known."""
    got = _batch_values(run, changes)
    if got is None:
        return None
    n, b, s, g = got
    return (n * b * s) % g == 0 and g >= 2


# ----------------------------------------------------------------------------------------------- the checker

def check_flags(flags: Iterable[tuple[str, str]], run: RunConfig
                ) -> tuple[tuple[tuple[str, str], ...], list[tuple[str, str, str]]]:
    """The computed flags that change the outcome, respelled for the version, and the rejected ones with why:
    ``(kept, [(flag, value, why), ...])``."""
    kept: list[tuple[str, str]] = []
    rejected: list[tuple[str, str, str]] = []
    for flag, value in flags:
        cur = current(run, flag)
        if value == "":  # "drop this flag": only a change when the run has it
            (kept.append((flag, value)) if cur is not None else rejected.append((flag, value, "not set")))
            continue
        if same(cur, value):
            rejected.append((flag, value, f"the run already has {name_of(flag)} {_norm(cur)}"))
            continue
        if flag.startswith("--"):
            right, why = flag_for_version(run, name_of(flag))
            if right is None:
                rejected.append((flag, value, why))
                continue
            if right != name_of(flag):
                flag = "--" + right
        kept.append((flag, value))
    batch = {name_of(f): v for f, v in kept if name_of(f) in BATCH_FLAGS}
    if batch and batch_ok(run, {}) is False and batch_ok(run, batch) is False:
        why = "the corrected batch still does not hold whole groups of num_generations"
        rejected += [(f, v, why) for f, v in kept if name_of(f) in BATCH_FLAGS]
        kept = [(f, v) for f, v in kept if name_of(f) not in BATCH_FLAGS]
    return tuple(kept), rejected


def proposals(sentence: str) -> list[tuple[str, list[str], re.Match[str]]]:
    """The ``--flag V [or W]`` proposals of a fix sentence (values named as context left out)."""
    out = []
    for m in _PROPOSAL.finditer(sentence):
        if _CONTEXT_BEFORE.search(sentence[:m.start()]) or _CONTEXT_AFTER.match(sentence[m.end():]):
            continue
        values = re.split(r" or |/", m.group(2))
        out.append((m.group(1), values, m))
    return out


def _rewrite(sentence: str, run: RunConfig, drop: set[tuple[str, str]]) -> str | None:
    """The sentence without its proposals of the run's own values (and of ``drop``): a value goes from its ``or``
    list, a proposal left without values goes whole; None when the sentence proposed nothing else. Flags written
    side by side (``--model M --load_args false``) are one combination: a member that restates the run's value
    stays while another member changes something."""
    found = proposals(sentence)
    if not found:
        return sentence
    keeps = []
    for name, values, m in found:
        cur = current(run, name)
        more = (_MORE if isinstance(cur, (list, tuple)) else _MORE_NUMBERS).match(sentence, m.end())
        if more is not None and more.group(0):  # a list value (--reward_weights 1.0 1.0): all its tokens are the value
            keeps.append([] if same(cur, [m.group(2), *more.group(0).split()]) else values)
            continue
        keeps.append([v for v in values if not same(cur, v) and ("--" + name, v) not in drop])
    restated = {m.start() for (_, values, m), keep in zip(found, keeps) if not keep}
    for combo in _COMBO.finditer(sentence):
        members = [t.start() + combo.start() for t in _FLAG.finditer(combo.group(0))]
        if any(start not in restated for start in members):
            # a combination that changes something (a placeholder, another flag): restating the run's value there
            # is context
            for i, (name, values, m) in enumerate(found):
                if combo.start() <= m.start() < combo.end():
                    keeps[i] = [v for v in values if ("--" + name, v) not in drop]
    if not any(keeps):
        return None
    out, pos = [], 0
    for (name, values, m), keep in zip(found, keeps):
        if keep == values:
            continue
        out.append(sentence[pos:m.start()])
        if keep:
            out.append(f"--{name}{m.group(0)[len(name) + 2]}" + (" or " if " or " in m.group(2) else "/").join(keep))
        pos = m.end()
    out.append(sentence[pos:])
    return re.sub(r"  +", " ", "".join(out)).strip()


def check_text(fix: Iterable[str], run: RunConfig, drop: Iterable[tuple[str, str]] = ()) -> tuple[str, ...]:
    """The fix sentences without proposals of the run's current values (and of the rejected ``drop`` flags)."""
    dropped = set(drop)
    out = []
    for sentence in fix:
        new = _rewrite(sentence, run, dropped)
        if new is not None:
            out.append(new)
    return tuple(out)


def check_finding(f: Finding, run: RunConfig) -> Finding:
    """The finding with its computed flags and fix sentences re-checked against ``run`` (module doc)."""
    if not f.flags and not any("--" in s for s in f.fix):
        return f
    flags, rejected = check_flags(f.flags, run)
    fix = check_text(f.fix, run, ((flag, value) for flag, value, _ in rejected))
    if flags == f.flags and fix == f.fix:
        return f
    return replace(f, flags=flags, fix=fix)


__all__ = ["BATCH_FLAGS", "batch_ok", "check_finding", "check_flags", "check_text", "correct_launch", "current",
           "flag_for_version", "known_flag", "proposals", "same"]
