"""Where a message can come from: lookup in the raise-site index (doctor/data/raise_sites.idx, format of raise_store.py).

The index (built by tools/build_raise_index.py from the released source of ms-swift, trl, vLLM, DeepSpeed, peft,
accelerate, transformers, LLaMA-Factory, OpenRLHF, axolotl, bitsandbytes, datasets, safetensors, flash-attn, verl and
torch.distributed) holds message templates with typed holes. It is read on the first lookup only: importing this module costs nothing, and a log without an exception or
error line never loads it. Each site is filed under its two rarest literal words; a lookup lists the words of the
message, checks the few sites filed under them with their template's regex, and scores the matches.

    lookup("ValueError: generation_batch_size (3) must be evenly divisible by num_generations (4). ...")
    raised_by(exc_line) -> [{"package": "ms-swift", "versions": "4.2-4.6", "module": "...", "function": "...",
                             "kind": "ValueError"}]
"""
from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import lazyre
from ..values import minor
from .message import parse
from .raise_store import HOLES, Store, words_of
from .raise_store import HOLES as _HOLES
from .raise_store import TOKEN as _TOKEN
from .site_rank import contradicted, rank_key
from .slips import retyped

DATA = Path(__file__).resolve().parent.parent / "data" / "raise_sites.idx"
_PART = lazyre.compile(r"\{\{|\}\}|\{(int|float|name|quoted|any)\}|[^{}]+|[{}]")
_HOLE_RX = {"int": r"[-+]?\d+", "float": r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|inf|nan)",
            "name": r"[\w.<>\-]+", "quoted": r"""'[^']*'|"[^"]*"|\S+""", "any": r".*?"}
_LEVELS = {"error", "warning", "critical", "info", "debug"}
MIN_TAIL = 20  # a truncated or embedded match needs this many characters of message
MIN_RUN = 12  # the start of a template's part that a message holds before its wording turns into another release's
LONG_LITERAL = 80  # this many of a template's own characters, in order, tell its site even if the rest differs
MIN_PREFIX = 30  # a message cut early (most of its template's words missing) needs this many characters


# raise sites that re-raise whatever failed below them, in every package that copies them: two errors raised there
# share the wrapper, not the cause, and its wording changing between releases says nothing about that cause
# (transformers' lazy submodule import, utils/import_utils.py _LazyModule._get_module: "Failed to import X because of
# the following error (look up to see its traceback):" with the error on the next line; trl's copy of it). Also the
# launchers and monitors that report a child's failure in their own words: torch elastic's process contexts
# (multiprocessing/api.py: `failed (exitcode: N) local_rank: ...` from _poll, `Sending process N closing signal`
# from _close, `Process N got signal` from the terminate handler) and agent (agent/server/api.py: `Received N death
# signal`), and vLLM's engine-core monitors (v1/engine/core_client.py: `Engine core proc X died unexpectedly`,
# `Engine core initialization failed. See root cause above.`): every child that dies is reported there alike
WRAPPER_SITES = frozenset({
    ("import_utils.py", "_LazyModule._get_module"), ("_lazy_module.py", "_LazyModule._get_module"),
    ("api.py", "SubprocessContext._poll"), ("api.py", "MultiprocessContext._poll"),
    ("api.py", "SubprocessContext._close"), ("api.py", "MultiprocessContext._close"),
    ("api.py", "_terminate_process_handler"), ("api.py", "SimpleElasticAgent.run"),
    ("api.py", "SimpleElasticAgent._invoke_run"),
    ("core_client.py", "MPClient.start_engine_core_monitor.monitor_engine_cores"),
    ("core_client.py", "MPClient._wait_for_engine_startup"), ("core_client.py", "MPClient.__init__.sigusr1_handler"),
})


def is_wrapper(module: str, where: str) -> bool:
    return (module.rsplit("/", 1)[-1], where) in WRAPPER_SITES


@dataclass(frozen=True)
class SiteMatch:
    package: str
    versions: str     # "0.15-0.16,0.18": the minor releases (last patch indexed) that hold this template
    module: str       # "trl/trainer/grpo_trainer.py"
    where: str        # "GRPOTrainer.__init__"
    kind: str         # exception class ("ValueError") or log level ("warning")
    template: str
    holes: dict = field(default_factory=dict, compare=False)
    score: float = 0.0
    cut: bool = field(default=False, compare=False)  # the message stops inside the template (a paste cut short)
    # the source text of the test that leads to the site in the newest indexed release holding it ('' if unguarded)
    condition: str = field(default="", compare=False)


class _Site:
    """One row of the index, with its literal words; regexes are compiled on first use."""
    __slots__ = ("_head", "_lit", "_rx", "gid", "row", "words")

    def __init__(self, row: list, words: frozenset, gid: int = 0):
        self.row = row
        self.words = words
        self.gid = gid
        self._lit = -1
        self._rx: dict[tuple[bool, bool], Any] = {}
        self._head: dict[bool, str] = {}

    def head(self, nows: bool = False) -> str:
        """The text every string the template's pattern (``regex(nows)``) matches from its start begins with: its
        literal text up to the first hole, spaces removed (``nows``), else up to the first space (a space between
        words is optional in the pattern); '' when the template opens with a hole or a space."""
        got = self._head.get(nows)
        if got is None:
            lits = []
            for m in _PART.finditer(self.row[5]):
                if m.group(1):
                    break
                tok = m.group(0)
                lits.append("{" if tok == "{{" else "}" if tok == "}}" else tok)
            text = "".join(lits)
            got = self._head[nows] = text.replace(" ", "") if nows else text.split(" ", 1)[0]
        return got

    @property
    def lit(self) -> int:
        if self._lit < 0:
            self._lit = len(_HOLES.sub("", self.row[5]).replace(" ", ""))
        return self._lit

    def regex(self, nows: bool = False, third_party: bool = True):
        """The template's pattern; ``third_party``: compiled by the `regex` module (the only one with partial
        matches, and the reading of \\w, \\d and \\s every message gets), else by re (see ``_same_in_re``)."""
        rx = self._rx.get((nows, third_party))
        if rx is None:
            if third_party:
                import regex as mod
            else:
                mod = re
            out = []
            for m in _PART.finditer(self.row[5]):
                tok = m.group(0)
                if m.group(1):
                    out.append("(" + _HOLE_RX[m.group(1)] + ")")
                    continue
                tok = "{" if tok == "{{" else "}" if tok == "}}" else tok
                out.append(mod.escape(tok.replace(" ", "")) if nows else
                           " ?".join(mod.escape(w) for w in tok.split(" ")))
            # re's build from the templates' cache file (lazyre.site_compiled: the same pattern object re.compile gives)
            rx = self._rx[(nows, third_party)] = (mod.compile("".join(out), mod.S) if third_party else
                                                  lazyre.site_compiled("".join(out), re.S))
        return rx


# an ASCII text without the separators \x1c-\x1f (which str.isspace(), hence re's \s, counts as white space and
# Unicode's White_Space, hence the `regex` module's, does not): the characters on which re and `regex` read the holes'
# \w, \d and \s alike, and the templates' escaped literals match the same. Such a message is matched whole with re,
# and `regex` (~66 M instructions to import) is imported only for a partial match (a message cut short) or another text
_OTHER_SPACE = lazyre.compile(r"[\x1c-\x1f]")


def _same_in_re(msg: str) -> bool:
    return msg.isascii() and not _OTHER_SPACE.search(msg)


class Index:
    """The sites, filed by their rarest literal word (``first``) and their next two (``second``): read from the
    data file bucket by bucket (raise_store.py), each site wrapped once, on first use."""

    def __init__(self, store: Store):
        self.store = store
        self.meta = store.meta
        self._sites: dict[int, _Site] = {}

    def _wrap(self, rows: list[list]) -> list[_Site]:
        out = []
        for r in rows:
            site = self._sites.get(r[0])
            if site is None:
                row = r[1:]
                site = self._sites[r[0]] = _Site(row, words_of(row[5]), r[0])
            out.append(site)
        return out

    def candidates(self, tokens: set[str], second: bool) -> list[_Site]:
        """The sites filed under one of ``tokens`` (``second``: also under their 2nd/3rd rarest word), in the
        order of the sorted list of all sites."""
        found: dict[int, _Site] = {}
        for t in tokens:
            for site in self._wrap(self.store.first(t)):
                found[site.gid] = site
            if second:
                for site in self._wrap(self.store.second(t)):
                    found[site.gid] = site
        return [found[g] for g in sorted(found)]

    @property
    def sites(self) -> list[_Site]:
        """Every site (decodes the whole file: tests and tools)."""
        return self._wrap(self.store.rows())


_index: Index | None = None
_lock = threading.Lock()


def index(path: Path | None = None) -> Index:
    """The index, read on first use (``path``: another data file, for tests)."""
    global _index
    if path is not None:
        return Index(Store.open(path))
    if _index is None:
        with _lock:
            if _index is None:
                _index = Index(Store.open(DATA))
    return _index


def loaded() -> bool:
    return _index is not None


def _try(site: _Site, msg: str, nows: bool, all_words: bool) -> tuple[float, tuple] | None:
    """(score, hole values) when the site's template matches ``msg``: whole (1.0), followed by more text (0.85),
    cut short by the paste (0.5-0.8, by how much of the template it covers), or inside a longer message (0.7)."""
    rx = site.regex(nows, third_party=not _same_in_re(msg))
    # a template that opens with a hole explains only what follows the hole: its own words must be enough to tell it
    # apart ('{any} is not implemented' is in every "X is not implemented for Y")
    head_hole = site.row[5].startswith("{")
    if all_words:
        m = rx.fullmatch(msg)
        if m:
            lead = m.group(1) if m.groups() else ""
            if head_hole and site.lit < MIN_TAIL and len(lead or "") > site.lit:
                return 0.6, m.groups()   # the hole holds most of the message: a guess, below what is reported
            return 1.0, m.groups()
        m = rx.match(msg)
        if m and _literal_enough(site, m) and (not head_hole or site.lit >= MIN_TAIL) and (
                m.end() == len(msg) or not msg[m.end()].isalnum() or not msg[m.end() - 1].isalnum()):
            return 0.85, m.groups()
        if site.lit >= 2 * MIN_TAIL:
            m = rx.search(msg)
            if m and m.end() - m.start() >= len(msg) / 2 and _literal_enough(site, m):
                return 0.7, m.groups()
        if not nows or len(site.words) < 3:
            return None  # without spaces, a cut-short match needs most of three or more words (checked by lookup)
    if len(msg) >= MIN_TAIL and not site.row[5].startswith("{any}"):
        # a match from the message's start, whole or cut short, begins with the template's head or stops inside it:
        # a message that does neither has none, and the `regex` module (the only one with partial matches) is not
        # imported to say so
        head = site.head(nows)
        if head and not (msg.startswith(head) or head.startswith(msg)):
            return None
        m = site.regex(nows).fullmatch(msg, partial=True)
        if m and m.partial:
            # a long run of the template's own words in order tells the site as well as most of a short template
            reached = _literal_reached(site.row[5], msg)
            covered = min(1.0, max(reached / max(site.lit, 1), reached / LONG_LITERAL))
            return 0.5 + 0.3 * covered, m.groups()
    return None


def _literal_reached(template: str, msg: str) -> int:
    """How many of the template's own characters (spaces aside) a message cut short shows: each literal part found in
    order, and of the part the message stops in, the start it ends with. A hole can take any text, so a message that
    runs on inside a hole and never reaches the next literal part shows only the parts before it ("Cannot find {any}
    in the system." does not cover "Cannot find valid samples, check the data format.")."""
    text = msg.replace(" ", "")
    reached, pos = 0, 0
    for i, part in enumerate(_HOLES.split(template)):
        part = part.replace(" ", "")
        if not part:
            continue
        at = text.find(part, pos) if i else (0 if text.startswith(part) else -1)
        if at >= 0:
            reached, pos = reached + len(part), at + len(part)
            continue
        # the message stops inside this part (its tail is the part's start), runs on with another release's wording
        # after a good start of it (MIN_RUN characters or more), or never reaches it
        tail = next((n for n in range(min(len(part), len(text) - pos), 0, -1) if part.startswith(text[-n:])), 0)
        if i == 0 and not tail:
            tail = len(text) if part.startswith(text) else 0
        # (a part opening with the punctuation that closed the hole before it: the message may close it otherwise)
        core = part.lstrip(".,;:!?)]'\"`")
        run = next((n for n in range(len(core) - 1, MIN_RUN - 1, -1) if core[:n] in text[pos:]), 0)
        return reached + max(tail, run)
    return reached


def _literal_enough(site: _Site, m) -> bool:
    """A match that is not the whole message must be mostly the template's own words, not its holes."""
    span = m.end() - m.start()
    return span > 0 and site.lit >= 0.4 * (span - m.group(0).count(" "))


def _kind_bonus(kind: str, exc_type: str | None, level: str | None) -> float:
    if exc_type:
        short = exc_type.rsplit(".", 1)[-1]
        if kind == short:
            return 0.05
        if kind not in _LEVELS:
            return -0.1
    if level and kind == level:
        return 0.05
    return 0.0


# CPython's own messages (Python/bltinmodule.c min_max, Objects/listobject.c, Objects/longobject.c, Python/ceval.c
# unpacking, Objects/abstract.c): any code raises them by calling a built-in, so a library template that holds their words
# in its literal text ("{name} is an empty sequence") is not where they came from
CPYTHON_WORDING = lazyre.compile(
    r"^(?:(?:max|min)\(\) (?:arg|iterable argument) is an empty sequence|(?:list|tuple|string) index out of range|"
    r"(?:float |integer )?division(?: or modulo)? by zero|not enough values to unpack|too many values to unpack|"
    r"'\w+' object is not (?:subscriptable|iterable|callable)|unhashable type: '\w+'|pop from (?:an )?empty "
    r"(?:list|set)|dictionary changed size during iteration)")


def lookup(text: str, exc_type: str | None = None, limit: int = 20, idx: Index | None = None) -> list[SiteMatch]:
    """Sites whose template matches the message in ``text`` (an exception line, with or without its stack,
    or an error/warning log line), best first. A message no template takes as written is tried as retyped by hand
    (its quotes all alike, its typing slips put right), scored a little lower."""
    found = _lookup(text, exc_type, limit, idx)
    if found:
        return found
    for variant, factor in retyped(text, idx or index()):
        again = _lookup(variant, exc_type, limit, idx)
        if again:
            return [replace(m, score=round(m.score * factor, 3)) for m in again]
    return []


def _lookup(text: str, exc_type: str | None, limit: int, idx: Index | None) -> list[SiteMatch]:
    msg = parse(text, exc_type)
    if len(msg.text) < 8 or CPYTHON_WORDING.match(msg.text):
        return []
    idx = idx or index()
    tokens = set(_TOKEN.findall(msg.text.lower()))
    prefix_ok = len(msg.text) >= MIN_PREFIX
    found: list[SiteMatch] = []
    full = False
    folded = "\n" in text.strip()  # only a message spread over lines can have a word cut by a line break
    # passes: the words as they are, the text without spaces (a fold mid-word), and last, for a message no template
    # took, a message cut early by a paste (every word of it but the cut last one is the template's; its rarest words
    # may be after the cut, so the sites filed under its 2nd/3rd rarest words are read too)
    passes = [(False, False)] + ([(True, False)] if folded else []) + ([(False, True)] if prefix_ok else [])
    for nows, early in passes:
        if early and found:
            break
        text_ = msg.text.replace(" ", "") if nows else msg.text
        low = text_.lower()
        for site in idx.candidates(tokens, second=nows or early):
            common = len(site.words & tokens)
            all_words = common == len(site.words)
            prefix = early and common >= 3 and len(tokens - site.words) <= 1
            if not all_words and not prefix and (common * 2 < len(site.words) or (common < 3 and not nows)):
                continue  # a cut paste keeps most words; a fold mid-word breaks a few
            if nows and sum(w in low for w in site.words) < 0.8 * len(site.words):
                continue
            hit = _try(site, text_, nows, all_words or nows)
            if hit is None:
                continue
            score, groups = hit
            full = full or score >= 1.0
            r = site.row
            holes = {name: (v or "").strip() for name, v in zip(r[6], groups) if v is not None}
            cut = score < 0.85
            score = round((score * 0.95 if nows else score) + _kind_bonus(r[4], msg.exc_type, msg.level), 3)
            found.append(SiteMatch(r[0], r[1], r[2], r[3], r[4], r[5], holes, score, cut, r[7] if len(r) > 7 else ""))
        if full:
            break  # the words are whole: no need to read the text without its spaces
    best: dict[tuple, SiteMatch] = {}
    for m in found:
        key = (m.package, m.module, m.where, m.kind, m.template, m.versions)
        if key not in best or m.score > best[key].score:
            best[key] = m
    found = sorted(best.values(), key=lambda s: (-s.score, -idx_lit(s), s.package, s.module, s.where))
    return found[:limit]


def _lit_only(m: re.Match) -> str:
    return " " if m.group(1) else m.group(0)


def idx_lit(s: SiteMatch) -> int:
    return len(_PART.sub(_lit_only, s.template).replace(" ", ""))


def _spans(versions: str, labels: list[str]) -> set[int]:
    out: set[int] = set()
    for part in versions.split(","):
        a, _, b = part.partition("-")
        if a in labels:
            out.update(range(labels.index(a), labels.index(b or a) + 1))
    return out


def narrow_versions(matches: list[SiteMatch], idx: Index | None = None) -> dict[str, str]:
    """Per package, the releases in which the best-scored matches exist ("ms-swift": "3.6-3.11")."""
    if not matches:
        return {}
    idx = idx or index()
    best: dict[str, float] = {}
    for m in matches:
        best[m.package] = max(best.get(m.package, -1.0), m.score)
    out = {}
    for pkg, top in best.items():
        labels = [minor(v) for v in idx.meta["versions"].get(pkg, [])]
        held: set[int] = set()
        for m in matches:
            if m.package == pkg and m.score >= top - 1e-9:
                held |= _spans(m.versions, labels)
        out[pkg] = _ranges(sorted(held), labels)
    return out


def _ranges(ids: list[int], labels: list[str]) -> str:
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(labels[ids[i]] if i == j else f"{labels[ids[i]]}-{labels[ids[j]]}")
        i = j + 1
    return ",".join(out)


def intersect(package: str, ranges: list[str], idx: Index | None = None) -> str:
    """The releases of ``package`` held by every range text of ``ranges`` ('' when none is)."""
    labels = [minor(v) for v in (idx or index()).meta["versions"].get(package, [])]
    held: set[int] | None = None
    for r in ranges:
        ids = _spans(r, labels)
        held = ids if held is None else held & ids
    return _ranges(sorted(held or ()), labels)


def all_releases(package: str, idx: Index | None = None) -> str:
    """The range text of every indexed release of ``package`` ("3.0-4.6"): a narrowing to it says nothing."""
    labels = [minor(v) for v in (idx or index()).meta["versions"].get(package, [])]
    return _ranges(list(range(len(labels))), labels)


def open_below(package: str, versions: str, idx: Index | None = None) -> str:
    """``versions`` as a reader may take it: a range that starts at the oldest release grpo-doctor has read says
    nothing of the older ones ("0.6-0.12" of vLLM, whose index starts at 0.6, is "<=0.12")."""
    try:
        labels = [minor(v) for v in (idx or index()).meta["versions"].get(package, [])]
    except (OSError, ValueError):
        return versions
    first, _, rest = versions.partition(",")
    low, _, high = first.partition("-")
    if not labels or low != labels[0]:
        return versions
    return "<=" + (high or low) + ("," + rest if rest else "")


# what changes in a check's wording between releases without changing the check: its holes, a placeholder printed
# as it is (transformers 4.45-4.47 print `accelerate>={ACCELERATE_MIN_VERSION}` from an f-string's doubled braces),
# and a version written in (`accelerate>=0.20.1` in one release, `{ACCELERATE_MIN_VERSION}` filled in the next)
_PLACEHOLDER = lazyre.compile(r"\{\{\s*\w*\s*\}\}|\{(?:int|float|name|quoted|any)\}|\{[A-Z_][A-Z0-9_]*\}"
                              r"|v?\d+(?:\.\d+)+(?:\.?(?:dev|rc|post)\d*)?")


def same_check(template: str) -> str:
    """A template with its placeholders and written-in versions as one mark, spaces collapsed: two releases' templates
    that read alike this way are the same check, whatever value each fills in."""
    return " ".join(_PLACEHOLDER.sub("{}", template).split())


def raised_after(m: SiteMatch, release: str, idx: Index | None = None) -> bool:
    """Whether an indexed release ``release`` or later of ``m``'s package raises the same check: the same file, function
    and exception, with a template that is ``m``'s once placeholders and versions are masked (``same_check``). A
    wording that a later release only fills in differently was not removed: upgrading does not remove the check."""
    idx = idx or index()
    labels = [minor(v) for v in idx.meta["versions"].get(m.package, [])]
    want, start = same_check(m.template), minor(release)
    if start not in labels:
        return False
    later = set(range(labels.index(start), len(labels)))
    for site in idx.candidates(set(words_of(HOLES.sub(" ", m.template))) or {""}, second=True):
        r = site.row
        if (r[0], r[2], r[3], r[4]) != (m.package, m.module, m.where, m.kind) or same_check(r[5]) != want:
            continue
        if _spans(r[1], labels) & later:
            return True
    return False


def best_sites(text: str, min_score: float = 0.8, *, frames: Sequence[str] = (), prefer: Sequence[str] = (),
               known: Mapping[str, str] | None = None) -> list[tuple[tuple, SiteMatch]]:
    """(rank key, site) of the sites that match ``text`` (an exception line, or an error log line) with at least
    ``min_score``, best first by site_rank.rank_key: ``frames`` (file paths of the stack, the raising frame
    last), ``prefer`` (packages the run's framework points at), ``known`` (package -> the version the log
    printed). Sites the stack contradicts are left out."""
    msg = parse(text)
    keyed = [(rank_key(m, idx_lit(m), msg.exc_type, msg.level, frames, prefer, known), m) for m in lookup(text)
             if m.score >= min_score and not contradicted(m.module, frames)]
    keyed.sort(key=lambda km: km[0])
    return keyed


def raised_by(exc_line: str, top: int = 3, min_score: float = 0.8, *, frames: Sequence[str] = (),
              prefer: Sequence[str] = (), known: Mapping[str, str] | None = None) -> list[dict]:
    """The sites that raise this exception line, for a finding's ``raised_by`` (JSON schema 1): at most
    ``top`` entries, the best first (``best_sites``), one per (package, module, function)."""
    out, seen = [], set()
    for _, m in best_sites(exc_line, min_score, frames=frames, prefer=prefer, known=known):
        key = (m.package, m.module, m.where)
        if key in seen:
            continue
        seen.add(key)
        out.append(site_json(m))
        if len(out) >= top:
            break
    return out


_RAISE_CODE = lazyre.compile(r"""^\s*(?:raise\s+([\w.]+)\(\s*|assert\b.*?,\s*)f?(['"])(.{8,})$""")


def complete_cut(module_path: str, func: str, code: str) -> SiteMatch | None:
    """The message a cut traceback's last frame raises, when its printed source line opens a string literal that
    starts exactly one indexed template of that module's function (``raise ValueError('GRPO with vLLM`` ->
    ``GRPO with vLLM is not compatible with `device_map`. Please set NPROC_PER_NODE ...``)."""
    m = _RAISE_CODE.match(code or "")
    if m is None:
        return None
    prefix = m.group(3).split(m.group(2), 1)[0].split("{", 1)[0]
    if len(prefix) < 8:
        return None
    path = module_path.replace("\\", "/")
    idx = index()
    found: dict[str, SiteMatch] = {}
    for site in idx.sites:
        r = site.row
        if r[3].rsplit(".", 1)[-1] != func or not path.endswith(r[2]) or not r[5].startswith(prefix):
            continue
        prev = found.get(r[5])
        versions = r[1] if prev is None else f"{prev.versions},{r[1]}"
        found[r[5]] = SiteMatch(r[0], versions, r[2], r[3], r[4], r[5], {}, 1.0, condition=r[7] if len(r) > 7 else "")
    return next(iter(found.values())) if len(found) == 1 else None


def site_json(m: SiteMatch) -> dict:
    out = {"package": m.package, "versions": m.versions, "module": m.module, "function": m.where, "kind": m.kind}
    if m.condition:
        out["condition"] = m.condition
    return out
