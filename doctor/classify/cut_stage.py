"""The stage a traceback cut before its exception line was in, by the table in doctor/data/cut_stages.toml: its
deepest frames name what the code was doing (loading weights, waiting for a server's answer, wrapping the model
with LoRA...), and the table says what usually fails there. Pure: the table is package data read once, on the
first cut traceback; nothing here reads an input."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..signals import Frame

TABLE = Path(__file__).resolve().parent.parent / "data" / "cut_stages.toml"
_KEYS = {"id", "stage", "does", "usual", "category", "decides", "clear", "funcs", "in_paths", "frames", "code",
         "position", "server", "server_category", "paste", "fix", "like", "backed_by", "innermost"}
_POSITIONS = {"after-final-bar"}


@dataclass(frozen=True)
class Stage:
    """A row of doctor/data/cut_stages.toml: a stage a traceback cut before its exception line can be in."""
    id: str
    stage: str                     # its name in the report
    does: str
    usual: tuple[str, ...]
    backed_by: tuple[str, ...]
    category: str = ""             # the candidate category ("" none)
    decides: bool = False          # the stage alone makes the candidate the reading
    clear: re.Pattern | None = None
    funcs: frozenset[str] = frozenset()
    in_paths: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    code: re.Pattern | None = None
    position: str = ""
    innermost: bool = False        # only the innermost frame can name it (a frame further out ran deeper code)
    server: str = ""
    server_category: str = ""
    paste: str = ""
    fix: tuple[str, ...] = ()

    def holds(self, fr: Frame) -> bool:
        """Whether one frame is in this stage."""
        path = fr.path.replace("\\", "/")
        if self.funcs and fr.func in self.funcs and (not self.in_paths or any(p in path for p in self.in_paths)):
            return True
        hay = f"{path} {fr.func}"
        if self.frames and any(f in hay for f in self.frames):
            return True
        return bool(self.code and fr.code and self.code.search(fr.code))


class TableError(ValueError):
    pass


def _one_line(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=2)
def load(path: Path = TABLE) -> tuple[Stage, ...]:
    from ..cachefiles import toml_table  # here: most runs end in no cut traceback and never read the table

    raw = toml_table(path.read_text(encoding="utf-8")).get("stage", [])
    by_id = {r.get("id"): r for r in raw}
    out = []
    for r in raw:
        bad = set(r) - _KEYS
        if r.get("like"):
            r = {**by_id[r["like"]], **r} if r["like"] in by_id else r
        if bad or not {"id", "stage", "does", "usual", "backed_by"} <= set(r):
            raise TableError(f"{path.name}: stage {r.get('id', '?')}: unknown keys {sorted(bad)} or missing keys")
        if r.get("position") and r["position"] not in _POSITIONS:
            raise TableError(f"{path.name}: stage {r['id']}: unknown position {r['position']!r}")
        rx = {k: re.compile(r[k]) for k in ("clear", "code") if k in r}
        out.append(Stage(id=r["id"], stage=r["stage"], does=_one_line(r["does"]), usual=tuple(r["usual"]),
                         backed_by=tuple(r["backed_by"]), category=r.get("category", ""),
                         decides=bool(r.get("decides")), funcs=frozenset(r.get("funcs", ())),
                         in_paths=tuple(r.get("in_paths", ())), frames=tuple(r.get("frames", ())),
                         position=r.get("position", ""), innermost=bool(r.get("innermost")),
                         server=_one_line(r.get("server", "")),
                         server_category=r.get("server_category", ""), paste=r.get("paste", ""),
                         fix=tuple(r.get("fix", ())), **rx))
    return tuple(out)


def by_id(stage_id: str) -> Stage:
    return next(s for s in load() if s.id == stage_id)


def in_stage(stage_id: str, fr: Frame) -> bool:
    """Whether a frame is in the named stage (the memory rules ask this of vLLM's distributed init)."""
    return by_id(stage_id).holds(fr)


def stage_of(frames: tuple[Frame, ...] | list[Frame]) -> tuple[Stage, Frame] | None:
    """(stage, the frame that names it) for the innermost frame that any frame-read stage holds, or None."""
    stages = [s for s in load() if not s.position]
    last = frames[-1] if frames else None
    for fr in reversed(frames):
        for s in stages:
            if s.holds(fr) and (not s.innermost or fr is last):
                return s, fr
    return None
