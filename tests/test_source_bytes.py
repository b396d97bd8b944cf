"""The sources hold no control characters: a regex written as "\\b" inside a non-raw string (a script that wrote a
source file through another string layer) becomes a backspace, which matches nothing a log holds, silently."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# tab, newline and carriage return are text; every other C0 control character (and DEL) is a slip
CONTROL = bytes(c for c in [*range(0, 9), 11, 12, *range(14, 32), 127])


def test_no_control_characters_in_sources():
    found = []
    for folder in ("doctor", "rules", "tools", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".toml") or "__pycache__" in path.parts:
                continue
            data = path.read_bytes()
            bad = sorted({f"0x{b:02x}" for b in data if b in CONTROL})
            if bad:
                found.append(f"{path.relative_to(ROOT)}: {', '.join(bad)}")
    assert found == [], found
