"""The rule catalog: one TOML file per rule in ``rules/``, loaded into ``RuleMeta`` records.

A rule is either pure data (``[[patterns]]`` on log lines, ``[[exceptions]]`` on parsed Python
exceptions) or names a Python check in ``doctor/checks`` (``check = "module:Class"``). Either way
its documentation (title, why, fix, references, examples) lives in the TOML entry, so ``explain``,
the README index and every report read the same words.
"""
from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import lazyre
from .model import CONFIDENCES, Role, Severity

CATEGORIES = (
    "batch-divisibility", "eval-batch-divisibility", "device-mismatch", "cuda-oom", "host-oom-killed",
    "vllm-oom-or-kv-cache", "hang-at-start", "hang-mid-training", "nccl-timeout",
    "checkpoint-adapter-only-load-args", "checkpoint-bloat", "checkpoint-corrupt",
    "vllm-version-incompatible", "vllm-engine-error", "reward-function-error", "reward-zero-or-flat",
    "loss-nan-or-inf", "grad-norm-zero", "output-degenerate", "gpu-underutilized", "slow-training",
    "dataset-or-template-error", "argument-error-other", "import-or-dependency-error",
    "multimodal-image-error", "deepspeed-config-error", "disk-full", "other",
)


# each category in plain words, for sentences that name a category to the person reading a report
CATEGORY_WORDS = {
    "batch-divisibility": "batch sizes that do not divide by the number of generations",
    "eval-batch-divisibility": "an evaluation batch size that does not divide by the number of generations",
    "device-mismatch": "tensors on different devices",
    "cuda-oom": "the GPU running out of memory",
    "host-oom-killed": "the host running out of memory",
    "vllm-oom-or-kv-cache": "vLLM finding too little GPU memory for its weights or KV cache",
    "hang-at-start": "a run that hangs before its first step",
    "hang-mid-training": "a run that stops making progress mid-training",
    "nccl-timeout": "an NCCL collective timing out between ranks",
    "checkpoint-adapter-only-load-args": "a full fine-tune saved as a LoRA adapter",
    "checkpoint-bloat": "checkpoints far larger than the model",
    "checkpoint-corrupt": "a checkpoint that cannot be saved or loaded",
    "vllm-version-incompatible": "a vLLM release that does not fit the trainer or torch",
    "vllm-engine-error": "the vLLM engine failing",
    "reward-function-error": "a reward function failing",
    "reward-zero-or-flat": "rewards stuck at zero or equal within each group",
    "loss-nan-or-inf": "a loss or metric becoming NaN or inf",
    "grad-norm-zero": "gradients that are zero",
    "output-degenerate": "degenerate or garbled generations",
    "gpu-underutilized": "GPUs that stay mostly idle",
    "slow-training": "slow training steps",
    "dataset-or-template-error": "the dataset or the chat template failing",
    "argument-error-other": "an argument or setting being refused",
    "import-or-dependency-error": "an import failing or packages that do not fit each other",
    "multimodal-image-error": "images or other media in the data failing",
    "deepspeed-config-error": "a DeepSpeed configuration being refused",
    "disk-full": "a full disk",
    "other": "a failure of no known kind",
}

# rules/<family>/: the folders of the catalog, mirrored by doctor/checks/<family>/, and the ids each may use
# (rules/README.md has the same table; a test checks that they agree)
FAMILY_IDS: dict[str, tuple[tuple[int, int], ...]] = {
    "batch": ((101, 199),), "memory": ((201, 209), (905, 905)), "vllm": ((210, 299),),
    "distributed": ((301, 319),), "hang": ((320, 399),), "args": ((401, 429), (960, 979)), "data": ((430, 449), (920, 939)),
    "deps": ((450, 459), (907, 919)), "config": ((460, 499),), "gpu": ((501, 599),), "rewards": ((601, 619), (940, 959)),
    "numerics": ((620, 639),), "outputs": ((640, 699),), "checkpoint": ((701, 899), (906, 906)),
    "fallback": ((990, 999),),
}
FAMILIES = tuple(FAMILY_IDS)


def id_in_family(rule_id: str, family: str) -> bool:
    try:
        n = int(rule_id[2:]) if rule_id.startswith("GD") else -1
    except ValueError:
        return False
    return any(lo <= n <= hi for lo, hi in FAMILY_IDS.get(family, ()))


# The keys a rule file may hold (rules/README.md has the table; a test checks the two agree)
KEYS = frozenset({"id", "slug", "category", "severity", "title", "why", "message", "fix", "references", "priority",
                  "versions", "examples", "not_examples", "patterns", "exceptions", "check", "fixer", "consequence",
                  "fallback", "options", "aliases", "action", "verify", "prevent", "confidence"})
# what to do about a finding (JSON ``action``; watch --on-failure acts on it): a transient fault to run again as is,
# a run to continue from its last good checkpoint, a configuration to correct and launch again, a bug to fix first
ACTIONS = ("restart", "resume", "relaunch", "stop")
PATTERN_KEYS = frozenset({"literals", "regex", "origin"})
EXCEPTION_KEYS = frozenset({"type", "message", "frames", "raised_in"})


class CatalogError(Exception):
    """A rule file is malformed. The message names the file."""


@dataclass(frozen=True)
class LinePattern:
    """A catalog rule's line pattern: its regex, tried on lines that hold one of its literals."""
    regex: Any                  # LazyRegex (a re.Pattern compiled on first use; regex.Pattern where re refuses it)
    literals: tuple[str, ...]   # at least one must occur in the line for the regex to be tried
    origin: str | None = None   # only lines from this origin ("vllm", "VllmWorker", ...)
    source: str = ""


@dataclass(frozen=True)
class ExceptionPattern:
    """A catalog rule's exception pattern: type, message and frames an exception must match."""
    type: Any | None            # compiled regex on the exception type (full dotted name)
    message: Any | None         # compiled regex on the message
    frames: tuple[str, ...]     # any frame path must contain one of these
    raised_in: tuple[str, ...]  # the last frame path must contain one of these


@dataclass(frozen=True)
class RuleMeta:
    """A rule file of the catalog (rules/<family>/<id>-<slug>.toml), parsed and checked."""
    id: str
    slug: str
    category: str
    severity: Severity
    title: str
    why: str
    message: str
    fix: tuple[str, ...]
    references: tuple[str, ...]
    patterns: tuple[LinePattern, ...]
    exceptions: tuple[ExceptionPattern, ...]
    check: str | None
    fixer: str | None
    consequence: bool
    fallback: bool
    priority: int
    examples: tuple[str, ...]
    not_examples: tuple[str, ...]
    versions: str
    path: str
    family: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()   # former ids of this rule (merged rules): --select/--ignore/explain still take them
    action: str = ""       # one of ACTIONS: the rule's default verdict (a diagnosis may refine it); every shipped
    #                        rule has one and a verify (tests/test_actions.py), a rule written in a test need not
    verify: str = ""       # what the next run's log shows when the fix worked
    prevent: str = ""      # the preflight / check-ckpt rule (and command) that would have caught it, if any
    confidence: str = ""   # the TOML's own level (CONFIDENCES), for a rule whose evidence is weaker than its kind's

    @property
    def role_hint(self) -> Role:
        return Role.consequence if self.consequence else Role.standalone

    @property
    def confidence_level(self) -> str:
        """How sure this rule's findings are, from what kind of rule it is (rules/README.md, "Confidence"): a
        signature or a check run with the other rules proves its condition (certain); a fallback check judges from
        the failure's structure (likely); a last-resort rule reads only how the log ends (possible). The TOML's
        ``confidence`` replaces it (a rule that fires on a trend, a risk or a threshold); a finding may still say
        less (Rule.make), never more."""
        if self.confidence:
            return self.confidence
        if self.fallback and self.options.get("last_resort"):
            return "possible"
        if self.fallback and self.check:
            return "likely"
        return "certain"


def rule_files(directory: Path | None = None) -> list[Path]:
    """Every rule file of the catalog: ``rules/<family>/GDnnn-slug.toml``, sorted by name (= by id)."""
    d = directory if directory is not None else rules_dir()
    return sorted(d.glob("*/GD*.toml"), key=lambda p: p.name)


def rules_dir() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_rules"
    if packaged.is_dir() and any(packaged.glob("*/GD*.toml")):
        return packaged
    return here.parent / "rules"


def _compile(expr: str, where: str) -> Any:
    # the standard library's re first: every regex of the catalog compiles with it, and the third-party `regex`
    # module costs ~20 ms of CPU to import, paid by every `watch` whose run prints one line a pattern rule looks at;
    # `regex` stays for a pattern only it accepts
    try:
        return lazyre.compiled(expr)   # from the cache of compiled patterns when it holds this one
    except re.error:
        pass
    import regex

    try:
        return regex.compile(expr)
    except regex.error as e:
        raise CatalogError(f"{where}: bad regex {expr!r}: {e}") from None


class LazyRegex:
    """A catalog regex compiled on first use: most rules never see a line with their literals, and
    compiling all of them took ~0.1 s of every run. ``compile()`` forces it (the catalog test does, so
    a bad regex still fails the suite and names its file)."""

    __slots__ = ("pattern", "where", "_rx")

    def __init__(self, pattern: str, where: str):
        self.pattern = pattern
        self.where = where
        self._rx: Any = None

    def compile(self) -> Any:
        if self._rx is None:
            self._rx = _compile(self.pattern, self.where)
        return self._rx

    def search(self, *args: Any, **kw: Any) -> Any:
        return (self._rx or self.compile()).search(*args, **kw)

    def match(self, *args: Any, **kw: Any) -> Any:
        return (self._rx or self.compile()).match(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compile(), name)


def _parse(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """A rule file's TOML as a dict; a file that is not TOML (or not UTF-8) is a CatalogError naming it."""
    # imported here: the catalog is read from its cache (_parsed) at most starts, and watch pays every import
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        text = (path.read_bytes() if raw is None else raw).decode("utf-8")
        # newlines as read_text translates them (the cache and a plain read parse the same text)
        return tomllib.loads(text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CatalogError(f"{path}: {e}") from None


def _load_one(path: Path, data: dict[str, Any] | None = None) -> RuleMeta:
    where = str(path)
    family = path.parent.name
    if family not in FAMILIES:
        raise CatalogError(f"{where}: rules live in rules/<family>/, one of {', '.join(FAMILIES)}")
    if data is None:
        data = _parse(path)
    unknown = sorted(set(data) - KEYS)
    unknown += [f"patterns.{k}" for p in data.get("patterns", []) for k in sorted(set(p) - PATTERN_KEYS)]
    unknown += [f"exceptions.{k}" for e in data.get("exceptions", []) for k in sorted(set(e) - EXCEPTION_KEYS)]
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(unknown)} (rules/README.md lists the keys)")
    for key in ("id", "slug", "category", "severity", "title", "why"):
        if key not in data:
            raise CatalogError(f"{where}: missing required key {key!r}")
    if not id_in_family(str(data["id"]), family):
        raise CatalogError(f"{where}: id {data['id']!r} is outside the ids of family {family!r} (rules/README.md)")
    if data["category"] not in CATEGORIES:
        raise CatalogError(f"{where}: unknown category {data['category']!r}")
    if "action" in data and data["action"] not in ACTIONS:
        raise CatalogError(f"{where}: action {data['action']!r} is not one of {', '.join(ACTIONS)}")
    if "confidence" in data and data["confidence"] not in CONFIDENCES:
        raise CatalogError(f"{where}: confidence {data['confidence']!r} is not one of {', '.join(CONFIDENCES)}")
    for key in ("verify", "prevent"):
        if not isinstance(data.get(key, ""), str) or (key in data and not data[key].strip()):
            raise CatalogError(f"{where}: {key!r} must be a non-empty string")
    pats = []
    for i, p in enumerate(data.get("patterns", [])):
        lits = tuple(p.get("literals", ()))
        if not lits:
            raise CatalogError(f"{where}: patterns[{i}] needs 'literals' (words that must occur for a match)")
        pats.append(LinePattern(LazyRegex(p["regex"], where), lits, p.get("origin"), p["regex"]))
    excs = []
    for ex in data.get("exceptions", []):
        excs.append(ExceptionPattern(
            LazyRegex(ex["type"], where) if "type" in ex else None,
            LazyRegex(ex["message"], where) if "message" in ex else None,
            tuple(ex.get("frames", ())),
            tuple(ex.get("raised_in", ())),
        ))
    if not pats and not excs and "check" not in data:
        raise CatalogError(f"{where}: a rule needs patterns, exceptions or a check")
    fix = data.get("fix", ())
    if isinstance(fix, str):
        fix = (fix,)
    return RuleMeta(
        id=data["id"], slug=data["slug"], category=data["category"],
        severity=Severity.parse(data["severity"]), title=data["title"], why=data["why"].strip(),
        message=data.get("message", data["title"]), fix=tuple(fix), references=tuple(data.get("references", ())),
        patterns=tuple(pats), exceptions=tuple(excs), check=data.get("check"), fixer=data.get("fixer"),
        consequence=bool(data.get("consequence", False)), fallback=bool(data.get("fallback", False)),
        priority=int(data.get("priority", 50)), examples=tuple(data.get("examples", ())),
        not_examples=tuple(data.get("not_examples", ())), versions=data.get("versions", ""), path=where, family=family,
        options=dict(data.get("options", {})), aliases=tuple(data.get("aliases", ())), action=data.get("action", ""),
        verify=data.get("verify", "").strip(),
        prevent=data.get("prevent", "").strip(), confidence=data.get("confidence", ""),
    )


# the parsed rule files, cached as JSON beside gate.py's caches (cachefiles.py), under a key made of every file's name
# and bytes: parsing the ~160 TOML files with tomllib cost ~0.1 s of CPU at every start of every command (a sixth of
# `watch -- true`); reading and hashing them and loading the JSON costs ~0.01 s. The checks below (keys, ids,
# categories) still run on the parsed data at every load; an edited, added or removed file gives a new key (the
# write prunes the older ones), and an unreadable or unwritable cache only costs the parse
_PARSED_CACHE_VERSION = 1


def _parsed(files: list[Path]) -> list[dict[str, Any] | None]:
    """Each file's parsed TOML, from the cache when it holds these very files; None for a file that does not parse
    (``_load_one`` parses it again and raises its CatalogError in catalog order, as without a cache)."""
    import json

    from . import cachefiles

    raws = []
    h = cachefiles.hasher(f"{_PARSED_CACHE_VERSION}\0{sys.version_info[:2]}".encode())
    for p in files:
        try:
            raw = p.read_bytes()
        except OSError:   # _load_one reads it again and raises, in catalog order
            return [None] * len(files)
        raws.append(raw)
        h.update(f"\0{p.parent.name}/{p.name}\0{len(raw)}\0".encode("utf-8", "surrogatepass"))
        h.update(raw)
    key = h.hexdigest()[:24]
    data = cachefiles.read(cachefiles.RULES, key)
    if data is not None:
        try:
            cached = json.loads(data)
            if isinstance(cached, list) and len(cached) == len(files) and all(isinstance(d, dict) for d in cached):
                return cached
        except (ValueError, RecursionError):
            pass
    datas: list[dict[str, Any] | None] = []
    for p, raw in zip(files, raws):
        try:
            datas.append(_parse(p, raw))
        except CatalogError:
            datas.append(None)
    if None in datas:
        return datas
    try:
        # only what JSON gives back unchanged (a TOML date or time would come back a string: not cached)
        text = json.dumps(datas, ensure_ascii=False)
        if json.loads(text) == datas:
            cachefiles.write(cachefiles.RULES, key, text.encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        pass
    return datas


# The catalog as built, kept in a second cache file (cachefiles.CATALOG, marshal) under a key made of every rule file's
# name, size and mtime and of this module's and model.py's (the checks and the records): reading and hashing the 196
# files, loading their JSON and checking it cost ~58 M instructions at every start of watch; a stat of each and the
# records rebuilt from the marshalled values cost ~15 M. A file's size and mtime stand for its bytes only once its mtime
# is older than the clock's coarse tick by far: a catalog with a file changed in the last ``_SETTLED_S`` seconds
# takes the path above (bytes hashed), and its build is not kept here, so two writes of one size within one tick
# cannot leave a stale entry.
_CATALOG_CACHE_VERSION = 1
_SETTLED_S = 2.0


def _stat_key(files: list[Path]) -> str | None:
    """The key of the built catalog of ``files``, or None when a file cannot be read or changed too recently."""
    import os
    import time

    from . import cachefiles, model
    parts = [f"{_CATALOG_CACHE_VERSION}\0{sys.version}"]
    settled = time.time_ns() - int(_SETTLED_S * 1e9)
    try:
        for p in (Path(__file__), Path(model.__file__ or "")):
            st = os.stat(p)
            parts.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}")
        for p in files:
            st = os.stat(p)
            if st.st_mtime_ns > settled:
                return None
            parts.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}")
    except OSError:
        return None
    return cachefiles.key_of("\n".join(parts).encode("utf-8", "surrogatepass"))


def _dump(m: RuleMeta) -> tuple:
    """A RuleMeta as plain values (marshal), which ``_undump`` builds back field by field."""
    return (m.id, m.slug, m.category, int(m.severity), m.title, m.why, m.message, m.fix, m.references,
            tuple((p.regex.pattern, p.regex.where, p.literals, p.origin, p.source) for p in m.patterns),
            tuple((e.type and (e.type.pattern, e.type.where), e.message and (e.message.pattern, e.message.where),
                   e.frames, e.raised_in) for e in m.exceptions),
            m.check, m.fixer, m.consequence, m.fallback, m.priority, m.examples, m.not_examples, m.versions, m.path,
            m.family, m.options, m.aliases, m.action, m.verify, m.prevent, m.confidence)


def _undump(r: tuple) -> RuleMeta:
    return _record(RuleMeta, (r[0], r[1], r[2], _SEVERITY[r[3]], r[4], r[5], r[6], r[7], r[8],
                              tuple(_record(LinePattern, (LazyRegex(rx, where), lits, origin, src))
                                    for rx, where, lits, origin, src in r[9]),
                              tuple(_record(ExceptionPattern, (t and LazyRegex(*t), msg and LazyRegex(*msg), frames, raised))
                                    for t, msg, frames, raised in r[10]), *r[11:]))


_SEVERITY = {int(s): s for s in Severity}
# the fields of the frozen records _undump builds, in their order
_FIELDS: dict[type, tuple[str, ...]] = {cls: tuple(f.name for f in fields(cls))
                                        for cls in (RuleMeta, LinePattern, ExceptionPattern)}


def _record(cls: type, values: tuple) -> Any:
    """The instance of the frozen dataclass ``cls`` (no __post_init__, no slots) that ``cls(*values)`` makes: its
    __dict__ holds each field in field order, as the generated __init__ sets them one object.__setattr__ call after
    another (that __init__ for the catalog's 194 records and their patterns: ~4 M instructions of every start)."""
    obj: Any = object.__new__(cls)
    vars(obj).update(zip(_FIELDS[cls], values, strict=True))
    return obj


def _built(key: str) -> tuple[RuleMeta, ...] | None:
    import marshal

    from . import cachefiles
    data = cachefiles.read(cachefiles.CATALOG, key)
    if data is None:
        return None
    try:
        return tuple(_undump(r) for r in marshal.loads(data))
    except (EOFError, ValueError, TypeError, IndexError, KeyError):
        return None


# load_catalog's key of each catalog it loaded (None: not kept, its files changed too recently): the key of what the
# rules' routing is built from (doctor/lazyrules.py)
_KEYS: dict[str | None, str | None] = {}


def catalog_key(directory: str | None = None) -> str | None:
    """The cache key of the catalog ``load_catalog(directory)`` loaded, or None (not loaded, or too recently changed)."""
    catalog(directory)
    return _KEYS.get(directory)


def catalog(directory: str | None = None) -> tuple[RuleMeta, ...]:
    """load_catalog(directory), the very tuple a call without arguments gave (lru_cache keeps ``f()`` and ``f(None)``
    apart: a second load)."""
    return load_catalog(directory) if directory is not None else load_catalog()


@lru_cache(maxsize=4)
def load_catalog(directory: str | None = None) -> tuple[RuleMeta, ...]:
    d = Path(directory) if directory else rules_dir()
    files = rule_files(d)
    key = _KEYS[directory] = _stat_key(files)
    if key is not None:
        got = _built(key)
        if got is not None:
            return got
    metas = [_load_one(p, data) for p, data in zip(files, _parsed(files))]
    seen: dict[str, str] = {}
    for m in metas:
        for key_ in (m.id, m.slug, *m.aliases):
            if key_ in seen:
                raise CatalogError(f"{m.path}: {key_!r} is already used by {seen[key_]}")
            seen[key_] = m.path
    out = tuple(sorted(metas, key=lambda m: m.id))
    if key is not None:
        import marshal

        from . import cachefiles
        try:
            cachefiles.write(cachefiles.CATALOG, key, marshal.dumps([_dump(m) for m in out]))
        except (ValueError, TypeError):   # a value marshal cannot write (an option's TOML date): not kept
            pass
    return out


def find_rule(key: str, catalog: tuple[RuleMeta, ...] | None = None) -> RuleMeta | None:
    cat = catalog if catalog is not None else load_catalog()
    k = key.strip().lower()
    for m in cat:
        if m.id.lower() == k or m.slug.lower() == k or k in (a.lower() for a in m.aliases):
            return m
    return None


def resolve(ref: str) -> Any:
    """'batch.divisibility:train_fix' -> doctor.checks.batch.divisibility.train_fix"""
    mod, _, name = ref.partition(":")
    module = importlib.import_module(f"doctor.checks.{mod}")
    try:
        return getattr(module, name)
    except AttributeError:
        raise CatalogError(f"doctor.checks.{mod} has no {name!r}") from None
