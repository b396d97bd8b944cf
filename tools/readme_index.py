"""Rewrite the rule index in README.md from the catalog (rules/*/*.toml): one place for the words.

Usage: python tools/readme_index.py          # rewrite README.md in place
       python tools/readme_index.py --check  # exit 1 if README.md is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor.catalog_view import index_row, rule_doc  # noqa: E402
from doctor.registry import load_catalog  # noqa: E402

START, END = "<!-- rule-index:start -->", "<!-- rule-index:end -->"


def index() -> str:
    rows = ["| id | slug | category | severity | what it names |", "|---|---|---|---|---|"]
    rows += [index_row(rule_doc(m)) for m in load_catalog()]
    return "\n".join(rows)


def main() -> int:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print("README.md has no rule-index markers", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{index()}\n{END}{tail}"
    if "--check" in sys.argv:
        if new != text:
            print("README.md rule index is out of date: run python tools/readme_index.py", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
