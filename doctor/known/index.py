"""The known-issues index (doctor/data/known_issues.json.gz): public threads about GRPO-training failures, each with
the error signatures its logs show, and matching of one message against them.

The file is read on the first lookup only (importing this module costs nothing; a healthy log never loads it).
A lookup tries the exact signature first (exception type + normalised message), then a tf-idf cosine over the
message's words against each signature of each thread, plus small bonuses when the exception type and the
finding's category agree. ``THRESHOLD`` was tuned with bench/known_issues.py (leave-one-out over the dev logs):
below it a thread is more often about another failure than the same one, and showing none beats a wrong one.
"""
from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .normalise import short_type, signature, words

DATA = Path(__file__).resolve().parent.parent / "data" / "known_issues.json.gz"
THRESHOLD = 0.5
COSINE_WEIGHT = 0.8   # score = 0.8 x cosine + 0.1 (same exception type) + 0.1 (same category); exact signature: 1.0
TYPE_BONUS = 0.1
CATEGORY_BONUS = 0.1
CONFIDENCES = ("confirmed", "maintainer", "unresolved")


@dataclass(frozen=True)
class Match:
    """A public thread of the known-issues index that matches a finding, and how well."""
    thread: str          # "owner/repo#N"
    title: str
    state: str           # open | closed
    category: str
    versions: str
    resolution: str
    confidence: str      # confirmed | maintainer | unresolved
    score: float
    exact: bool = False
    # the thread's error signatures as (exception type, message): what its raise sites are looked up from
    signatures: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # how it is tied to the finding (doctor/known/mechanism.py): raise-site | type-component-phase | similarity;
    # '' until doctor/known.for_finding sets it
    basis: str = ""

    @property
    def url(self) -> str:
        repo, num = self.thread.split("#", 1)
        return f"https://github.com/{repo}/issues/{num}"

    def to_json(self) -> dict[str, Any]:
        return {"thread": self.thread, "url": self.url, "title": self.title, "state": self.state,
                "category": self.category, "versions": self.versions, "resolution": self.resolution,
                "confidence": self.confidence, "score": round(self.score, 3)} | ({"basis": self.basis} if self.basis else {})


class Index:
    """Threads and their signatures, with an inverted word index for the similarity."""

    _FIELDS = ("meta", "threads", "exact", "sigs", "postings", "idf")
    # kept marshalled one item each, decoded when read: a lookup reads the 30-100 signatures that share a word with its
    # message and their threads, of ~640 and ~550 (decoding them all was ~11 M instructions of each failed run's report)
    _PACKED = ("threads", "sigs")

    def dump(self) -> tuple:
        """What ``restore`` rebuilds this index from (plain values: marshal keeps floats and dict order exactly)."""
        import marshal
        return tuple([marshal.dumps(v) for v in getattr(self, k)] if k in self._PACKED else getattr(self, k)
                     for k in self._FIELDS)

    @classmethod
    def restore(cls, fields: tuple) -> Index:
        idx = cls.__new__(cls)
        for k, v in zip(cls._FIELDS, fields, strict=True):
            setattr(idx, k, _Packed(v) if k in cls._PACKED else v)
        return idx

    def __init__(self, doc: dict[str, Any]):
        self.meta: dict[str, Any] = doc.get("meta", {})
        self.threads: list[dict[str, Any]] = list(doc.get("threads", []))
        self.exact: dict[str, list[int]] = {}
        self.sigs: list[tuple[int, str, dict[str, float]]] = []  # (thread, short type, unit tf-idf vector)
        self.postings: dict[str, list[int]] = {}
        bags: list[tuple[int, str, Counter]] = []
        for ti, t in enumerate(self.threads):
            for s in t.get("signatures", []):
                msg = s.get("message", "")
                # "key" and "words" are precomputed by the build (tools/refresh_known_issues.py); computed here
                # otherwise (a hand-made index in tests)
                self.exact.setdefault(s.get("key") or signature(s.get("type"), msg), []).append(ti)
                bag = Counter(s["words"] if "words" in s else words(msg))
                if bag:
                    bags.append((ti, short_type(s.get("type")), bag))
        df: Counter = Counter()
        for _, _, bag in bags:
            df.update(bag.keys())
        n = max(1, len(bags))
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        for ti, typ, bag in bags:
            vec = self._vector(bag)
            si = len(self.sigs)
            self.sigs.append((ti, typ, vec))
            for w in vec:
                self.postings.setdefault(w, []).append(si)

    def _vector(self, bag: Counter) -> dict[str, float]:
        vec = {w: (1.0 + math.log(c)) * self.idf.get(w, math.log(1 + max(1, len(self.sigs))) + 1.0)
               for w, c in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {w: v / norm for w, v in vec.items()}

    def match(self, exc_type: str | None, message: str, category: str | None = None, top: int = 3,
              threshold: float = THRESHOLD, exclude: frozenset[str] = frozenset()) -> list[Match]:
        """The best threads for one message, best first; ``exclude``: thread ids left out (leave-one-out)."""
        best: dict[int, tuple[float, bool]] = {}
        typ = short_type(exc_type)
        for ti in self.exact.get(signature(exc_type, message), []):
            best[ti] = (1.0 - CATEGORY_BONUS, True)
        bag = Counter(words(message))
        if bag:
            q = self._vector(bag)
            dots: dict[int, float] = {}
            for w, qv in q.items():
                for si in self.postings.get(w, ()):
                    dots[si] = dots.get(si, 0.0) + qv * self.sigs[si][2][w]
            for si, dot in dots.items():
                ti, styp, _ = self.sigs[si]
                score = COSINE_WEIGHT * min(1.0, dot) + (TYPE_BONUS if typ and styp == typ else 0.0)
                if score > best.get(ti, (0.0, False))[0]:
                    best[ti] = (score, False)
        out = []
        for ti, (score, exact) in best.items():
            t = self.threads[ti]
            if t["thread"] in exclude:
                continue
            if category and t.get("category") == category:
                score += CATEGORY_BONUS
            score = min(1.0, score)
            if score >= threshold:
                out.append(Match(t["thread"], t.get("title", ""), t.get("state", ""), t.get("category", "other"),
                                 t.get("versions", ""), t.get("resolution", ""), t.get("confidence", "unresolved"),
                                 score, exact, tuple((s.get("type") or "", s.get("message", ""))
                                                     for s in t.get("signatures", []))))
        rank = {c: i for i, c in enumerate(CONFIDENCES)}
        out.sort(key=lambda m: (-round(m.score, 3), rank.get(m.confidence, 9), m.thread))
        return out[:top]


class _Packed(Sequence):
    """A list whose items are kept as their marshal bytes, each decoded on its first read (then kept)."""

    def __init__(self, raw: list[bytes]):
        self._raw = raw
        self._got: list[Any] = [None] * len(raw)   # an item is never None (a thread's dict, a signature's tuple)

    def __len__(self) -> int:
        return len(self._raw)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._raw)))]
        got = self._got[i]
        if got is None:
            import marshal
            got = self._got[i] = marshal.loads(self._raw[i])
        return got


_lock = threading.Lock()
_index: Index | None = None


def load(path: Path | None = None) -> Index:
    """The shipped index (read once, then cached); ``path``: another file (tests, the refresh tool)."""
    global _index
    if path is not None:
        return Index(read(path))
    with _lock:
        if _index is None:
            _index = _shipped() if DATA.is_file() else Index({})
        return _index


_CACHE_FORM = 2   # the form of Index.dump in the cache file (2: threads and signatures marshalled one by one)


def _shipped() -> Index:
    """The shipped index, from the cache folder when it was built from these very bytes before: reading the file and
    weighting every signature's words took ~25 ms of CPU in each failed run's report (doctor/cachefiles.py)."""
    import marshal
    import sys

    from .. import cachefiles
    data = DATA.read_bytes()
    key = cachefiles.key_of(f"{sys.version_info[:2]}\0{_CACHE_FORM}\0".encode() + data)
    cached = cachefiles.read(cachefiles.KNOWN, key)
    if cached is not None:
        try:
            return Index.restore(marshal.loads(cached))
        except (EOFError, ValueError, TypeError):
            pass
    import gzip  # here: the index usually comes from the cache, and watch pays every import at its start
    idx = Index(json.loads(gzip.decompress(data).decode("utf-8")))
    try:
        cachefiles.write(cachefiles.KNOWN, key, marshal.dumps(idx.dump()))
    except ValueError:   # a value marshal cannot write: no cache, the index as built
        pass
    return idx


def read(path: Path) -> dict[str, Any]:
    import gzip
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def loaded() -> bool:
    """True once the shipped index was read (tests: a healthy log must not read it)."""
    return _index is not None
