"""The failure category the words of a log are closest to, by a linear model trained on the labelled public failure
logs under fixtures/devlogs*/ (tools/build_category_words.py writes doctor/data/category_words.json.gz). Pure: the
caller gives the lines; the model is read once from the package.

It is word statistics, not a rule: the session asks it only when no rule placed a failure (the primary finding is a
generic one of category ``other``), and the finding says so. Leave-one-set-out on the development sets measured at
their harvest (tools/build_category_words.py --cross-validate) is the estimate of what it adds on unseen logs.

Features, the same at training and here: the last ``TAIL_LINES`` lines of each text; tokens are identifiers of 3+
characters (lowercased, except exception class names ending in Error/Exception) and pairs of CJK characters;
tf-idf with sublinear term frequency and L2 norm, as scikit-learn's TfidfVectorizer(sublinear_tf=True) computes it.
"""
from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

TAIL_LINES = 60
# the smallest lead of the best category over the next one that is taken (below it the words do not choose);
# chosen by the leave-one-set-out measure (tools/build_category_words.py --cross-validate)
MIN_MARGIN = 0.05
# and the best category's own decision value must reach this: words less unlike that category's logs than the others'
# are not yet like them (leave-one-set-out over 22 sets: 45 re-categorised, 33 wrong -> right and 3 right -> wrong at
# -0.2, against 158, 67 and 22 without it). Lowered to -0.3 from the three retired blind sets (dev68-70) as the tool
# read them at their harvest, each predicted by a model trained without it: 3 generic primaries re-categorised, all
# wrong -> right (at -0.4: 4 right, 1 wrong); over the tuned development results the same step costs 9 of 2,152
# logs whose label is "other" (a residue the rules were tuned to leave there)
MIN_SCORE = -0.3
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|[\u4e00-\u9fff]{2}")
_KEEP_CASE = re.compile(r"(?:Error|Exception)$")
_MAX_CHARS = 200_000  # of one text: a pasted line of megabytes adds no category


def tokens(text: str) -> Iterable[str]:
    for m in _TOKEN.finditer(text[:_MAX_CHARS]):
        word = m.group(0)
        yield word if _KEEP_CASE.search(word) else word.lower()


@dataclass(frozen=True)
class Reading:
    category: str
    margin: float                 # the best category's score minus the next one's


@dataclass(frozen=True)
class _Model:
    classes: tuple[str, ...]
    idf: dict[str, float]
    coef: dict[str, dict[int, float]]
    intercept: tuple[float, ...]


@lru_cache(maxsize=1)
def _model() -> _Model | None:
    try:
        raw = resources.files("doctor").joinpath("data/category_words.json.gz").read_bytes()
        data = json.loads(gzip.decompress(raw))
    except (OSError, ValueError):
        return None
    return _Model(classes=tuple(data["classes"]), idf=data["idf"],
                  coef={t: {int(k): v for k, v in w.items()} for t, w in data["coef"].items()},
                  intercept=tuple(data["intercept"]))


def vector(texts: Iterable[str], idf: dict[str, float]) -> dict[str, float]:
    """The L2-normalised tf-idf vector of the last TAIL_LINES lines of each text, over the model's vocabulary."""
    counts: Counter[str] = Counter()
    for text in texts:
        tail = "\n".join(text.splitlines()[-TAIL_LINES:])
        counts.update(t for t in tokens(tail) if t in idf)
    weights = {t: (1.0 + math.log(n)) * idf[t] for t, n in counts.items()}
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {t: w / norm for t, w in weights.items()}


def scores(texts: Iterable[str]) -> tuple[list[float], dict[str, float]] | None:
    """The decision value of every category (the model's class order) and the vector, or None without a model."""
    model = _model()
    if model is None:
        return None
    vec = vector(texts, model.idf)
    out = list(model.intercept)
    for t, w in vec.items():
        for k, c in model.coef.get(t, {}).items():
            out[k] += w * c
    return out, vec


def closest(texts: Iterable[str]) -> Reading | None:
    """The category the texts' words are closest to, when its decision value reaches MIN_SCORE and leads the next
    by MIN_MARGIN; else None."""
    got = scores(texts)
    model = _model()
    if got is None or model is None:
        return None
    values = got[0]
    order = sorted(range(len(values)), key=lambda k: -values[k])
    best, margin = order[0], values[order[0]] - values[order[1]]
    if margin < MIN_MARGIN or values[best] < MIN_SCORE:
        return None
    return Reading(model.classes[best], margin)


__all__ = ["MIN_MARGIN", "MIN_SCORE", "TAIL_LINES", "Reading", "closest", "scores", "tokens", "vector"]
