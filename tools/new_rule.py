"""Scaffold a new rule: ``python tools/new_rule.py FAMILY SLUG [--check] [--category C] [--severity S]``.

Writes ``rules/FAMILY/GDnnn-SLUG.toml`` with the next free id of the family (rules/README.md), and with
``--check`` also ``doctor/checks/FAMILY/<slug_with_underscores>.py`` holding a check class wired to it.
The TOML's placeholders must be filled in before the suite passes (the catalog tests read every key).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor.registry import CATEGORIES, FAMILY_IDS  # noqa: E402

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

TOML = '''id = "{id}"
slug = "{slug}"
category = "{category}"
severity = "{severity}"
action = "relaunch"
verify = "TODO: what the next run's log shows when the fix worked (a metric, a line, a step reached)"
priority = 50
title = "TODO: one line, what failed"
versions = "TODO: the library versions whose wording or behaviour this rule knows"
message = "TODO: the finding's message ({{name}} holes take the match's named groups and the run's flags)"
why = """
TODO: the mechanism, the versions, what the numbers mean.
"""
fix = ["TODO: a concrete fix, with this run's flags and values"]
references = ["TODO: public URLs (docs, source at a tag, issue threads)"]
{body}'''

PATTERN_BODY = '''examples = ["TODO: a real line the rule must fire on"]

[[patterns]]
literals = ["TODO"]
regex = 'TODO'
'''

CHECK_BODY = 'check = "{family}.{module}:{cls}"\n'

CHECK_PY = '''"""{id}: TODO one line on what this check judges (rules/{family}/{id}-{slug}.toml)."""
from __future__ import annotations

from typing import Any

from ...model import Finding
from ...engine.state import RunState
from ...rules import Rule, evidence_of
from ...signals import LogLine


class {cls}(Rule):
    """TODO: what it collects and when it fires."""

    kinds = frozenset({{LogLine}})  # the signal types it reads (doctor/signals.py)
    literals = ("TODO",)   # words that must occur in a line for feed() to see it

    def __init__(self, meta):
        super().__init__(meta)
        self.seen: list[LogLine] = []

    def feed(self, signal: Any) -> None:
        self.seen.append(signal)

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.seen:
            return []
        first = self.seen[0]
        return [self.make(evidence=[evidence_of(first)], count=len(self.seen), seq=first.seq)]
'''


def next_id(family: str, rules_root: Path) -> str:
    used = {int(p.name[2:5]) for p in rules_root.glob("*/GD*.toml") if p.name[2:5].isdigit()}
    for lo, hi in FAMILY_IDS[family]:
        for n in range(lo, hi + 1):
            if n not in used:
                return f"GD{n:03d}"
    raise SystemExit(f"new_rule: family {family!r} has no free id left (rules/README.md)")


def scaffold(family: str, slug: str, *, check: bool, category: str, severity: str,
             rules_root: Path = ROOT / "rules", checks_root: Path = ROOT / "doctor" / "checks") -> list[Path]:
    if family not in FAMILY_IDS:
        raise SystemExit(f"new_rule: unknown family {family!r}; one of {', '.join(FAMILY_IDS)}")
    if not SLUG_RE.match(slug):
        raise SystemExit(f"new_rule: slug {slug!r} must be kebab-case (lower-case words joined by '-')")
    if category not in CATEGORIES:
        raise SystemExit(f"new_rule: unknown category {category!r}")
    if any(p.name[6:-5] == slug for p in rules_root.glob("*/GD*.toml")):
        raise SystemExit(f"new_rule: slug {slug!r} is taken")
    rid = next_id(family, rules_root)
    module = slug.replace("-", "_")
    cls = "".join(w.capitalize() for w in slug.split("-"))
    body = CHECK_BODY.format(family=family, module=module, cls=cls) if check else PATTERN_BODY
    toml = rules_root / family / f"{rid}-{slug}.toml"
    toml.parent.mkdir(parents=True, exist_ok=True)
    toml.write_text(TOML.format(id=rid, slug=slug, category=category, severity=severity, body=body), encoding="utf-8")
    out = [toml]
    if check:
        pkg = checks_root / family
        pkg.mkdir(parents=True, exist_ok=True)
        init = pkg / "__init__.py"
        if not init.exists():
            init.write_text(f'"""Checks of the {family} rules (rules/{family}/)."""\n', encoding="utf-8")
        py = pkg / f"{module}.py"
        if py.exists():
            raise SystemExit(f"new_rule: {py} exists")
        py.write_text(CHECK_PY.format(id=rid, family=family, slug=slug, cls=cls), encoding="utf-8")
        out.append(py)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family", choices=list(FAMILY_IDS))
    ap.add_argument("slug")
    ap.add_argument("--check", action="store_true", help="also write a Python check wired to the rule")
    ap.add_argument("--category", default="other")
    ap.add_argument("--severity", default="error", choices=["info", "warning", "error"])
    a = ap.parse_args(argv)
    for p in scaffold(a.family, a.slug, check=a.check, category=a.category, severity=a.severity):
        print(f"wrote {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
