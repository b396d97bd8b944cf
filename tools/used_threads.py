"""Tell whether public threads may go into a new development or blind set.

A thread may not when the project already used it (a fixture, a rule case or reference, the
known-issues index, dev-logs) or when its id's sha256 is in the held-out list. Ids are
lowercase ``owner/repo#number``; links to issues, pulls and discussions count as their id.

    python tools/used_threads.py huggingface/trl#3061 modelscope/ms-swift#4100
    python tools/used_threads.py --file ids.txt --extra ../blind3/ids.txt
    python tools/used_threads.py --cited ../blind4/cases      # files whose text cites a held-out thread

prints one line per id, ``free`` or ``used: <where>``, and exits 1 when any id is not free.
Ids listed with ``--extra`` (other sets being harvested) count as used too.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEARCHED = ("fixtures", "rules", "tools/known_issues", "doctor", "bench", "tests")
LINK = re.compile(r"github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/(?:issues|pull|discussions)/(\d+)")
SHORT = re.compile(r"\b([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)#(\d+)\b")
TEXT_SUFFIXES = {".toml", ".json", ".jsonl", ".md", ".py", ".txt", ".log", ".yaml", ".yml", ".csv"}


def normalise(thread: str) -> str | None:
    found = LINK.search(thread) or SHORT.search(thread)
    if not found:
        return None
    owner, repo, number = found.groups()
    return f"{owner}/{repo}#{int(number)}".lower()


def ids_in_text(text: str) -> set[str]:
    out = {f"{o}/{r}#{int(n)}".lower() for o, r, n in LINK.findall(text)}
    out |= {f"{o}/{r}#{int(n)}".lower() for o, r, n in SHORT.findall(text)}
    return out


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def used_ids(shared: Path) -> dict[str, str]:
    where: dict[str, str] = {}
    roots = [ROOT / name for name in SEARCHED] + [shared / "dev-logs"]
    for root in roots:
        if not root.exists():
            continue
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.is_symlink() or path.suffix not in TEXT_SUFFIXES:
                continue
            with path.open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    for thread in ids_in_text(line):
                        where.setdefault(thread, shown(path))
    return where


def held_out(shared: Path) -> set[str]:
    listed = shared / "heldout-threads.sha256"
    if not listed.exists():
        sys.exit(f"error: {listed} not found; pass --shared with the folder that holds heldout-threads.sha256")
    return {line.split()[0].lower() for line in listed.read_text().splitlines() if line.strip()}


def cited_held_out(folders: list[Path], hashes: set[str]) -> int:
    """Print each file under ``folders`` that cites a held-out thread; 1 when any does."""
    found = 0
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.is_symlink() or path.suffix not in TEXT_SUFFIXES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for thread in sorted(ids_in_text(text)):
                if hashlib.sha256(thread.encode()).hexdigest() in hashes:
                    print(f"{shown(path)}: cites a held-out thread")
                    found += 1
                    break
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("threads", nargs="*")
    parser.add_argument("--file", type=Path, help="a file with one thread id or link per line")
    parser.add_argument("--extra", type=Path, action="append", default=[], help="ids of other sets, one per line")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--cited", type=Path, action="append", default=[],
                        help="a folder of logs (a new set's cases): report each held-out thread its texts cite (a "
                             "paste that links another thread carries that thread's words)")
    args = parser.parse_args(argv)
    if args.cited:
        return cited_held_out(args.cited, held_out(args.shared))
    asked = list(args.threads)
    if args.file:
        asked += [line for line in args.file.read_text().splitlines() if line.strip()]
    where = used_ids(args.shared)
    for extra in args.extra:
        for line in extra.read_text().splitlines():
            thread = normalise(line)
            if thread:
                where.setdefault(thread, str(extra))
    hashes = held_out(args.shared)
    clash = 0
    for raw in asked:
        thread = normalise(raw)
        if thread is None:
            print(f"{raw.strip()}: not a thread id (owner/repo#number or a GitHub link)")
            clash += 1
        elif hashlib.sha256(thread.encode()).hexdigest() in hashes:
            print(f"{thread}: used: held out")
            clash += 1
        elif thread in where:
            print(f"{thread}: used: {where[thread]}")
            clash += 1
        else:
            print(f"{thread}: free")
    return 1 if clash else 0


if __name__ == "__main__":
    sys.exit(main())
