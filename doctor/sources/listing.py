"""A directory listing pasted into a log: ``ls -l`` / ``ls -lh`` rows, ``du -sh`` / ``du -h`` rows, ``tree`` rows (with
``-h`` sizes or names only), Windows ``dir`` rows, eza/exa ``-l`` rows, "name: size" lines and "name  size" tables
(plain or markdown) of checkpoint files, read into (name, bytes, line) entries. Pure: text in, entries out.

People paste the listing of a checkpoint folder when it is too big or holds the wrong files; the numbers in it are
the facts a checkpoint rule needs (doctor/checks/checkpoint/listing.py). Sizes are read as printed: ``ls -l``
bytes (digits, or digits grouped by spaces, commas or dots), and the 1024-based suffixes of ``ls -h`` and
``du -h`` (coreutils' human_readable: K, M, G, T, P, with an optional ``i``/``B``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import lazyre
from .prose_text import is_prose

# `ls -l`: mode, links, owner, group, size, date (any locale: "Sep 19 14:43", "9月  19 14:43", "2024-09-19 14:43"), name
_LS = lazyre.compile(r"^[-dlcbps][-rwxsStTl]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+(?:[.,]\d+)?[KMGTP]?)\s+"
                 r"(?P<date>.+?)\s+(?P<name>[^\s/]+(?:/[^\s/]+)*/?[*@/|=]?)(?:\s+->\s+\S+)?$")
# `du -sh checkpoint-*` / `du -h --max-depth 1`: size, then a path
_DU = lazyre.compile(r"^(?P<size>\d+(?:[.,]\d+)?(?:[KMGTP](?:i?B)?)?)\s+(?P<name>\S+)$")
# `tree -h` / `tree -s` / `tree --du -h` (tree(1): "[size]" before each name, after the branch drawing)
_TREE = lazyre.compile(r"^[\s│|`]*(?:[├└]──|[|`]--)\s*\[\s*(?P<size>\d+(?:[.,]\d+)?[KMGTP]?)\s*\]\s+(?P<name>\S+?)/?$")
# `tree` without -h: the names only (what a checkpoint holds, not how big it is)
_TREE_NAME = lazyre.compile(r"^[\s│|`]*(?:[├└]──|[|`]--)\s*(?P<name>[^\s\[][^\s]*?)/?$")
# Windows `dir`: date, time (12 or 24 h), <DIR> or the size in bytes with the locale's group separator, name
_DIR = lazyre.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}\s+\d{1,2}:\d{2}(?:\s*[AP]M)?\s+"
                  r"(?P<size><DIR>|\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+|\d+)\s+(?P<name>\S.*?)$")
# eza/exa `-l`: permissions (a leading "." for a plain file), size with a lowercase k, user, date, name
_EZA = lazyre.compile(r"^[.dl][-rwxsStT]{9}[@+.]?\s+(?P<size>-|\d+(?:\.\d+)?[kKMGTP]?)\s+\S+\s+(?P<date>.+?)\s+"
                  r"(?P<name>[^\s/]+/?)$")
# "checkpoint-300: 43 GB" written by hand
_COLON = lazyre.compile(r"^(?P<name>[\w.\-/]+):\s+(?P<size>\d+(?:[.,]\d+)?\s?[KMGTP](?:i?B)?)$", re.I)
# "pytorch_model_fsdp.bin        36 981 387 757   (37 GB ...)": a checkpoint file's name, then its size
# `aws s3 ls --recursive` (awscli's ls: date, time, size in bytes, key) of a checkpoint folder copied to object storage
_S3 = lazyre.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(?P<size>\d+)\s+(?P<name>\S+)$")
# a checkpoint folder's name then its size (a table typed or copied by hand: "checkpoint-300   43G"; a markdown table's
# row once the paste reader took its bars off: "checkpoint-300 43 GB")
_DIR_TABLE = lazyre.compile(r"^(?P<name>(?:[\w.\-]+/)*(?:checkpoint|global_step)[-_]?\d+/?)\s+"
                        r"(?P<size>\d+(?:[.,]\d+)?\s?[KMGTP](?:i?B)?)$", re.I)
_TABLE = lazyre.compile(r"^(?P<name>[\w.\-]+\.(?:safetensors|bin|pt|pth|json|ckpt|model))\s{2,}"
                    r"(?P<size>\d{1,3}(?:[ ,.\u202f]\d{3})+|\d+(?:\.\d+)?\s?(?:[KMGTP]i?B?|bytes)?)(?:\s.*)?$")
_MD_RULE = lazyre.compile(r"^\|?[\s:|-]*-{3}[\s:|-]*$")  # a markdown table's rule row, not a tree's branch
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_CKPT_NAME = lazyre.compile(r"(?:checkpoint|global_step|step|epoch)[-_]?\d+|\.(?:safetensors|bin|pt|pth)$|^latest$|"
                        r"adapter_config\.json|optimizer|zero_to_fp32")


@dataclass(frozen=True)
class Entry:
    """One entry of a directory listing pasted into a log (ls -l, du, tree, dir...): a name and its size."""
    name: str        # as listed, without ls's type suffix ("global_step625", "pytorch_model.bin")
    size: int | None  # bytes; None for a directory whose ls size is only its inode (4096)
    is_dir: bool
    line: int        # the log line it was read from
    form: str        # "ls" | "du" | "tree" | "table" | "dir" | "eza" | "colon" | "s3"
    printed: str = ""  # the size as the listing printed it ("15G", "36 981 387 757")


def size_bytes(text: str) -> int | None:
    """'15013097353' -> 15013097353, '36 981 387 757' -> 36981387757, '15G' -> 16106127360, '1.5MiB' -> 1572864."""
    t = text.strip().replace("\u202f", " ")
    if re.fullmatch(r"\d{1,3}(?:[ ,.]\d{3})+", t):
        return int(re.sub(r"\D", "", t))
    m = re.fullmatch(r"(\d+(?:[.,]\d+)?)\s?([KMGTP]?)(?:i?B|bytes)?", t, re.I)
    if m is None:
        return None
    return int(float(m.group(1).replace(",", ".")) * _UNITS[m.group(2).upper()])


def parse_line(text: str, line: int) -> Entry | None:
    """The listing entry on one log line, or None."""
    t = text.strip()
    if not t or len(t) > 300:
        return None
    m = _LS.match(t)
    if m is not None:
        name = m.group("name")
        is_dir = t[0] == "d" or name.endswith("/")
        name = name.rstrip("*@/|=")
        if name in (".", ".."):
            return None
        size = size_bytes(m.group("size"))
        return Entry(name, None if is_dir else size, is_dir, line, "ls", m.group("size"))
    m = _DU.match(t)
    if m is not None and _CKPT_NAME.search(m.group("name")):
        name = m.group("name").rstrip("/")
        base = name.rsplit("/", 1)[-1]
        return Entry(base, size_bytes(m.group("size")), "." not in base, line, "du", m.group("size"))
    m = _TREE.match(t)
    if m is not None:
        name = m.group("name")
        return Entry(name, size_bytes(m.group("size")), "." not in name, line, "tree", m.group("size"))
    m = _TABLE.match(t)
    if m is not None:
        return Entry(m.group("name"), size_bytes(m.group("size")), False, line, "table", m.group("size"))
    m = _DIR_TABLE.match(t)
    if m is not None:
        base = m.group("name").rstrip("/").rsplit("/", 1)[-1]
        return Entry(base, size_bytes(m.group("size")), True, line, "table", m.group("size"))
    m = _S3.match(t)
    if m is not None and _CKPT_NAME.search(m.group("name")):
        return Entry(m.group("name").rsplit("/", 1)[-1], int(m.group("size")), False, line, "s3", m.group("size"))
    m = _DIR.match(t)
    if m is not None:
        name, size = m.group("name"), m.group("size")
        if size == "<DIR>":
            return None if name in (".", "..") else Entry(name, None, True, line, "dir", size)
        return Entry(name, int(re.sub(r"\D", "", size)), False, line, "dir", size)
    m = _EZA.match(t)
    if m is not None:
        name, is_dir = m.group("name").rstrip("/"), t[0] == "d" or m.group("name").endswith("/")
        size = None if is_dir or m.group("size") == "-" else size_bytes(m.group("size"))
        return Entry(name, size, is_dir, line, "eza", m.group("size"))
    m = _COLON.match(t)
    if m is not None and _CKPT_NAME.search(m.group("name")):
        base = m.group("name").rstrip("/").rsplit("/", 1)[-1]
        return Entry(base, size_bytes(m.group("size")), "." not in base, line, "colon", m.group("size"))
    if t[:1] == "|" and t[-1:] == "|":
        cells = [c.strip() for c in t[1:-1].split("|")]
        if len(cells) == 2 and _CKPT_NAME.search(cells[0]) and size_bytes(cells[1]) is not None:
            # a markdown table of checkpoint folders (or files) and their sizes, typed or copied by hand
            base = cells[0].strip("`").rstrip("/").rsplit("/", 1)[-1]
            return Entry(base, size_bytes(cells[1]), "." not in base, line, "table", cells[1])
    m = _TREE_NAME.match(t)
    if m is not None and not _MD_RULE.match(t):
        name = m.group("name")
        return Entry(name, None, "." not in name, line, "tree", "")
    return None


def blocks(lines: list[tuple[int, str]], min_rows: int = 2) -> list[list[Entry]]:
    """Runs of listing rows (a blank or unreadable line in between is allowed once, a person's sentences any number
    of times) of at least ``min_rows``."""
    out: list[list[Entry]] = []
    cur: list[Entry] = []
    gap = 0
    for line_no, text in lines:
        e = parse_line(text, line_no)
        if e is not None:
            cur.append(e)
            gap = 0
            continue
        if cur and is_prose(text):
            continue  # "here is the second one:" between two pasted rows
        gap += 1
        if gap > 1 and cur:
            if len(cur) >= min_rows:
                out.append(cur)
            cur = []
    if len(cur) >= min_rows:
        out.append(cur)
    return out
