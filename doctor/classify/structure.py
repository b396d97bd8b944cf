"""The structural classifier (issue 15 point 2): the category of an exception no signature rule claims, from
the component that raised it, the exception type and the frames it went through, by the table in
doctor/data/structure.toml. Pure: the table is package data read once; nothing here reads an input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import lazyre
from ..signals import ExceptionInfo, Frame
from .component import component, deepest_library, from_site, stack_for

TABLE = Path(__file__).resolve().parent.parent / "data" / "structure.toml"
_KEYS = {"id", "category", "stackless", "types", "not_types", "message", "raised_in", "deepest_lib", "any_frame", "code", "below", "not_any",
         "not_message", "doc", "cases", "backed_by", "fix", "verify", "title", "run_shows", "site_test",
         "several_reasons"}
# wrappers that only report that something else failed; the entry is decided by what they wrap
CONSEQUENCES = {"ChildFailedError", "DistBackendError", "DistNetworkError", "DistStoreError", "KeyboardInterrupt",
                "SystemExit", "BrokenPipeError", "ConnectionResetError", "CalledProcessError", "SignalException",
                # torch.multiprocessing.spawn's report of a child's failure: the child's own exception follows it
                "ProcessRaisedException", "ProcessExitedException"}


@dataclass(frozen=True)
class Entry:
    """An entry of the structural table (doctor/data/structure.toml)."""
    id: str
    category: str
    doc: str
    backed_by: tuple[str, ...]
    types: frozenset[str] = frozenset()
    not_types: frozenset[str] = frozenset()
    message: re.Pattern | None = None
    not_message: re.Pattern | None = None
    code: re.Pattern | None = None
    # the test that leads to the message's raise site in library source (the raise-site index's condition)
    site_test: re.Pattern | None = None
    raised_in: tuple[str, ...] = ()
    deepest_lib: tuple[str, ...] = ()
    any_frame: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    not_any: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()   # the fix lines of this entry, in place of its rule's (a rule shared by several entries)
    verify: str = ""            # how to see it fixed, in place of its rule's
    title: str = ""             # what failed, in place of its rule's title (an entry narrower than its category)
    cases: str = ""             # the usual causes, printed after the doc unless the evidence names the run's own
    stackless: bool = False     # only for an exception printed without frames of its own (a title, a summary)
    run_shows: tuple[str, ...] = ()  # facts the run must show around it (classify/run_context.py FACTS)
    several_reasons: bool = False  # its files raise for reasons its doc does not explain (pins_branch)


@dataclass(frozen=True)
class Verdict:
    """The structural table's entry for an exception (or a traceback cut before it)."""
    entry: Entry
    exc: ExceptionInfo | None     # None: a traceback cut before its exception line
    frames: tuple[Frame, ...]
    component: str                # who raised it: "vLLM", "ms-swift", "the script's code"...
    where: Frame | None           # the frame that decided (innermost library frame, else the raise site)
    runners_up: tuple[str, ...] = ()  # the categories of the later table entries that match too, in table order
    context: tuple[tuple[str, str], ...] = ()  # (fact, where it was read) of the entry's run_shows


class TableError(ValueError):
    pass


@lru_cache(maxsize=2)
def load(path: Path = TABLE) -> tuple[Entry, ...]:
    from ..cachefiles import toml_table  # here: most runs never read the table, and watch pays every import

    data = toml_table(path.read_text(encoding="utf-8"))
    out = []
    for raw in data.get("entry", []):
        bad = set(raw) - _KEYS
        if bad or not {"id", "category", "doc", "backed_by"} <= set(raw):
            raise TableError(f"{path.name}: entry {raw.get('id', '?')}: unknown keys {sorted(bad)} or missing keys")
        # compiled when an exception first reaches the entry: a failure is classified by a few of the ~75 entries
        rx = {k: lazyre.compile(raw[k]) for k in ("message", "not_message", "code", "site_test") if k in raw}
        out.append(Entry(id=raw["id"], category=raw["category"], doc=raw["doc"].strip(),
                         backed_by=tuple(raw["backed_by"]), types=frozenset(raw.get("types", ())),
                         not_types=frozenset(raw.get("not_types", ())),
                         raised_in=tuple(raw.get("raised_in", ())), deepest_lib=tuple(raw.get("deepest_lib", ())),
                         any_frame=tuple(raw.get("any_frame", ())), below=tuple(raw.get("below", ())),
                         not_any=tuple(raw.get("not_any", ())), fix=tuple(raw.get("fix", ())),
                         verify=raw.get("verify", ""), title=raw.get("title", ""),
                         cases=raw.get("cases", "").strip(),
                         stackless=bool(raw.get("stackless", False)), run_shows=tuple(raw.get("run_shows", ())),
                         several_reasons=bool(raw.get("several_reasons", False)),
                         **rx))
    # an entry keyed on the exception itself (its message, failing line, raise-site test or the function that raised
    # it) says more than one keyed only on the folder or the frames it went through: it goes first, whatever its place
    # in the file
    return tuple(sorted(out, key=lambda e: not keyed(e)))


def keyed(e: Entry) -> bool:
    return e.message is not None or e.code is not None or e.site_test is not None or bool(e.raised_in)


def pins_branch(e: Entry) -> bool:
    """Whether the entry explains the check that raised the exception, not only the usual failure of the file it
    was raised in: an entry marked ``several_reasons`` matches a file whose raises mean different things unless its
    message, failing line or site test says which."""
    return not e.several_reasons or bool(e.message or e.code or e.site_test)


def _hay(fr: Frame) -> str:
    """A frame's path from its installed package on (component.from_site: not the environment's folders) and its
    function."""
    return f"{from_site(fr.path)} {fr.func}"


def _has(fr: Frame | None, words: tuple[str, ...]) -> bool:
    return fr is not None and any(w in _hay(fr) for w in words)


def matches(e: Entry, exc: ExceptionInfo | None, frames: tuple[Frame, ...], facts: dict | None = None) -> bool:
    if (e.types or e.message) and exc is None:
        return False
    if e.run_shows and not all(f in (facts or {}) for f in e.run_shows):
        return False
    if e.types and exc is not None and exc.short_type not in e.types:
        return False
    if e.not_types and exc is not None and exc.short_type in e.not_types:
        return False
    msg = exc.message if exc is not None else ""
    if e.message and not e.message.search(msg):
        return False
    if e.not_message and e.not_message.search(msg):
        return False
    if e.stackless and (exc is None or exc.frames):
        return False  # the exception's own frames (a cut stack beside it may stop above the raise)
    if e.not_any and any(_has(f, e.not_any) for f in frames):
        return False
    if e.raised_in and not (frames and _has(frames[-1], e.raised_in)):
        return False
    if e.deepest_lib and not _has(deepest_library(frames), e.deepest_lib):
        return False
    if e.any_frame and not any(_has(f, e.any_frame) for f in frames):
        return False
    if e.code and not any(e.code.search(f.code) for f in frames if f.code):
        return False
    if e.site_test and not (exc is not None and any(e.site_test.search(t) for t in site_tests(exc))):
        return False
    if e.below:
        if not any(_has(f, e.below) or (f.code and any(w in f.code for w in e.below)) for f in frames[:-1]):
            return False
    return True


def classify(exc: ExceptionInfo | None, frames: tuple[Frame, ...], table: tuple[Entry, ...] | None = None,
             facts: dict | None = None) -> Verdict | None:
    """The first entry of the table that matches decides; the categories of the later ones that match too are
    its runners-up (a finding that is only "possible" names them as its alternatives). ``facts``: what the run shows
    around the exception (classify/run_context.py), for the entries that ask for it."""
    entries = table if table is not None else load()
    for i, e in enumerate(entries):
        if matches(e, exc, frames, facts):
            lib = deepest_library(frames)
            where = lib or (frames[-1] if frames else None)
            comp = component(where.path) if where is not None else "unknown"
            if e.category == "reward-function-error":
                comp = "a reward function"
            others = dict.fromkeys(o.category for o in entries[i + 1:]
                                   if o.category != e.category and matches(o, exc, frames, facts))
            context = tuple((f, (facts or {})[f]) for f in e.run_shows)
            return Verdict(e, exc, frames, comp, where, tuple(others), context)
    return None


SITE_LINE = 0  # the line number of a frame taken from the raise-site index (no frame in the log)


@lru_cache(maxsize=512)
def site_matches(text: str) -> tuple:
    """The raise-site index's matches for a text, best first, looked up once per text (the structural verdict, the
    framework reading and watch's repeated evaluations ask the same wordings)."""
    from .raise_sites import lookup
    return tuple(lookup(text))


def _closest(exc: ExceptionInfo, floor: float) -> list:
    """The raise-site index's best matches (all of the top score) for a frameless exception's wording, when that score
    reaches ``floor``; [] for a short message, an unindexed wording or an unreadable index. Looked up once per
    wording: the structural verdict and the framework both ask."""
    if not exc.message or len(exc.message) < 20:
        return []
    try:
        found = site_matches(f"{exc.type}: {exc.message}")
    except (OSError, ValueError):
        return []
    if not found or found[0].score < floor:
        return []
    return [m for m in found if m.score >= found[0].score - 1e-9]


# a message the paste cut short (or a shorter wording of an older release) still tells its site when this much of it
# is the template's own start: the raise-site index scores such a prefix 0.5-0.8 by how much of the template it covers
CUT_FLOOR = 0.65
CUT_MIN_CHARS = 40


def _closest_or_cut(exc: ExceptionInfo) -> list:
    """``_closest`` at the whole-message floor, else the first of a long message's cut-short matches when they are
    all in one module of one package."""
    best = _closest(exc, 0.9)
    if best or len(exc.message or "") < CUT_MIN_CHARS:
        return best
    cut = _closest(exc, CUT_FLOOR)
    # one module of one package (an assert that moved between two functions of a module across releases)
    return cut[:1] if cut and len({(m.package, m.module) for m in cut}) == 1 else []


def site_tests(exc: ExceptionInfo) -> list[str]:
    """The tests (library source) that lead to the raise sites of this exception's wording, as the index recorded
    them for its closest matches; [] when the wording is not indexed."""
    return [m.condition for m in _closest_or_cut(exc) if m.condition]


def site_frames(exc: ExceptionInfo) -> tuple[Frame, ...]:
    """For an exception printed without any frame: the function that raises its wording, from the raise-site index
    (doctor/classify/raise_sites.py), as one frame with line SITE_LINE; () when the wording is not indexed or
    several packages or functions raise it alike. Of two functions whose templates both hold the words, the one
    whose template has more literal text is the raiser (``Attempted to assign {any} = {any} multimodal tokens to``
    over ``Attempted to assign {any} {any} tokens to``)."""
    best = _closest_or_cut(exc)
    if not best:
        return ()
    if len({(m.package, m.where.rsplit(".", 1)[-1]) for m in best}) != 1:
        best = _most_literal(best)
    # one function of one package; a module moved between releases (swift/llm/ -> swift/pipelines/) is the same site
    if not best or len({(m.package, m.where.rsplit(".", 1)[-1]) for m in best}) != 1:
        return ()
    m = best[0]
    if "/" not in m.module:
        return ()   # a file at the root of an sdist (flash-attn's setup.py) runs in pip's build folder, not site-packages
    return (Frame(f"site-packages/{m.module}", SITE_LINE, m.where.rsplit(".", 1)[-1]),)


def _most_literal(best: list) -> list:
    """The matches of ``best`` whose template holds the most literal text."""
    from .raise_sites import idx_lit
    top = max(idx_lit(m) for m in best)
    return [m for m in best if idx_lit(m) == top]


def site_candidates(exc: ExceptionInfo) -> list[Frame]:
    """For an exception printed without any frame whose wording several functions raise: each function's frame (line
    SITE_LINE), of one package or of several (trl's parser copies transformers' HfArgumentParser wording); [] when
    the wording is not indexed."""
    best = _closest(exc, 0.9)
    if not best:
        return []
    seen = dict.fromkeys((m.module, m.where.rsplit(".", 1)[-1]) for m in best if "/" in m.module)
    return [Frame(f"site-packages/{module}", SITE_LINE, func) for module, func in seen]


def _agreed(exc: ExceptionInfo) -> Verdict | None:
    """The verdict every raise site of a frameless exception's wording gives alike (one category for all, whichever
    package raised it), or None."""
    verdicts = [classify(exc, (fr,)) for fr in site_candidates(exc)]
    if not verdicts or any(v is None for v in verdicts):
        return None
    return verdicts[0] if len({v.entry.category for v in verdicts if v is not None}) == 1 else None


def site_package_paths(exc: ExceptionInfo) -> list[str]:
    """The source path of the indexed wording when every close match is one package's (several of its functions may
    raise it): enough to tell whose code ran, not which function. [] otherwise."""
    best = _closest(exc, 0.8)
    return [f"site-packages/{best[0].module}"] if best and len({m.package for m in best}) == 1 and \
        "/" in best[0].module else []


def first_failure(exceptions: list[ExceptionInfo], open_tbs: list, facts: dict | None = None) -> Verdict | None:
    """The verdict for the first real exception of a run (or, with none, its first cut traceback); ``facts`` as for
    classify."""
    real = [e for e in sorted(exceptions, key=lambda e: e.seq) if e.short_type not in CONSEQUENCES]
    for exc in real[:3]:
        frames = stack_for(exc, open_tbs) or site_frames(exc)
        v = classify(exc, frames, facts=facts)
        if v is None and not frames:
            v = _agreed(exc)
        if v is not None:
            return v
        if exc.frames:
            return None  # the first real exception has its own stack and nothing knows it: GD999
    if real:
        return None
    for _line, frames in open_tbs[:3]:
        v = classify(None, frames, facts=facts)
        if v is not None:
            return v
    return None
