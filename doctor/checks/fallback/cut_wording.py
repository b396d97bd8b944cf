"""An exception message cut short by a paste, read by what it starts with: the raise-site index names the one library
template the start belongs to (doctor/classify/raise_sites.py lookup: a message that stops inside its template), the
template is filled with the values the start gave and placeholders for the cut part, and the catalog's signature
rules are asked which of them reads that wording. The answer is that rule's category and title, never its computed
fix: numbers behind the cut are not known."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ... import lazyre
from ...signals import ExceptionInfo

_HOLE = lazyre.compile(r"\{(int|float|name|quoted|any)\}")
_PLACEHOLDER = {"int": "2", "float": "0.5", "name": "x", "quoted": "'x'", "any": "2"}  # "2": most holes hold numbers
MIN_START = 30  # characters of message before the cut: fewer name too many templates


@dataclass(frozen=True)
class CutReading:
    """An exception message cut short by a paste, read as a catalog rule's wording: its category and title."""
    rule_id: str
    category: str
    title: str
    template: str
    where: str      # "trl 0.15-0.16 GRPOTrainer.__init__"


def fill(template: str, holes: dict) -> str:
    """The template with the values the message's start gave, placeholders for the holes after the cut."""
    values = iter(list(holes.values()))
    out = []
    last = 0
    for m in _HOLE.finditer(template):
        out.append(template[last:m.start()])
        v = next(values, None)
        out.append(v if v else _PLACEHOLDER[m.group(1)])
        last = m.end()
    out.append(template[last:])
    return "".join(out).replace("{{", "{").replace("}}", "}")


@lru_cache(maxsize=1)
def _signature_rules() -> tuple:
    from ...registry import load_catalog
    return tuple(m for m in load_catalog() if (m.patterns or m.exceptions) and not m.fallback)


def _rule_reading(line: str) -> tuple[str, str, str] | None:
    """(rule id, category, title) of the first signature rule that fires on this one line."""
    import io

    from ...engine import Session
    from ...sources.logtext import LineReader
    s = Session(_signature_rules())
    for ln in LineReader("<template>", [0]).lines(io.BytesIO(line.encode())):
        s.feed_line(ln)
    found = [f for f in s.finish() if f.severity.name != "info"]
    return (found[0].rule_id, found[0].category, found[0].title) if found else None


def read_cut(exc: ExceptionInfo) -> CutReading | None:
    """What a cut exception message is, from the one template its start belongs to; None when it is whole, too short,
    or its start fits several templates."""
    if len(exc.message) < MIN_START:
        return None
    from ...classify.raise_sites import lookup
    try:
        found = lookup(f"{exc.type}: {exc.message}")
    except (OSError, ValueError):
        return None
    if not found or not found[0].cut or any(not m.cut for m in found[:3]):
        return None  # a whole match: the signature rules had their chance on the real text
    top = [m for m in found if m.score >= found[0].score - 0.05]
    if len({m.template for m in top}) != 1:
        return None
    m = top[0]
    reading = _rule_reading(f"{m.kind if m.kind[:1].isupper() else exc.type}: {fill(m.template, m.holes)}")
    if reading is None:
        return None
    where = "; ".join(dict.fromkeys(f"{t.package} {t.versions} `{t.where}`" for t in top[:3]))
    return CutReading(reading[0], reading[1], reading[2], m.template, where)
