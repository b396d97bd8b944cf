"""The raise-site index on disk (doctor/data/raise_sites.idx, format 3): sites filed in buckets by their rarest
literal word, each bucket compressed on its own, so that a lookup decodes only the buckets of its message's words,
and inside a bucket only the rows it reads.

Format 1 was one gzip'd JSON list of 34,000 sites: every failing log paid about 0.5 s of CPU to parse it and to
rank the words of every template. Format 2 does that ranking once, at build time (``encode``, called by
tools/build_raise_index.py), and a lookup reads the header and the few buckets it needs (``Store``).

Layout (integers are big-endian u32)::

    MAGIC | n_buckets | meta_len | zdict_len | meta: zlib(JSON) | zdict | offsets[n_buckets + 1] | buckets

Bucket ``i`` is zlib(lines, preset dictionary ``zdict``: a sample of the buckets, which saves a fifth of the size of
buckets compressed alone), ``i == crc32(word) % n_buckets`` for each word it files. Its first line is the JSON
``[first, second]``, each further line the JSON of one row (JSON text holds no raw newline). Format 2 was one JSON
``[first, second, rows]`` a bucket: a lookup follows ``second`` into ~300 buckets for one row of each, and parsing
each bucket's ~33 rows was more than half of a failed run's raise-site lookups (~40 ms of CPU under watch);
format 3 parses a row when it is read. Both formats are read (``--convert`` turns a format-2 file into format 3):

- ``rows``: ``[gid, package, versions, module, where, kind, template, holes]`` of the sites whose rarest literal
  word falls in this bucket, and a ninth element ``condition`` where the site is guarded (the source text of the
  test that leads to it in the newest release holding it: tools/raise_index_ast.py); ``gid`` is the site's place in
  the sorted list of all sites (format 1's order);
- ``first``: word -> indices in ``rows`` of the sites filed under it (their rarest word);
- ``second``: word -> ``[bucket, index]`` of the sites whose second or third rarest word it is (for text folded
  mid-word, which may break the rarest word).

Words are ``[a-z0-9_]{3,}`` of the template's literal text, lower-cased; "rarest" is by the number of sites
holding the word, then the longer word, then alphabetical. Same rows in, same bytes out.
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

from .. import lazyre

MAGIC = b"GDRSIX3\n"
MAGICS = {b"GDRSIX2\n": 2, MAGIC: 3}
FORMAT = 3
N_BUCKETS = 1024   # about 33 sites each: a message of 20 words decodes about 2 ms of buckets
ZDICT_STRIDE, ZDICT_SIZE = 40, 32768
TOKEN = lazyre.compile(r"[a-z0-9_]{3,}")
HOLES = lazyre.compile(r"\{(?:int|float|name|quoted|any)\}")
_U32 = struct.Struct(">I")


def words_of(template: str) -> frozenset[str]:
    """The literal words a template's site is found by."""
    return frozenset(TOKEN.findall(HOLES.sub(" ", template).lower()))


def bucket_of(word: str, n: int = N_BUCKETS) -> int:
    return zlib.crc32(word.encode("utf-8")) % n


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def encode(meta: dict, rows: list[list], n: int = N_BUCKETS, fmt: int = FORMAT) -> bytes:
    """The index file of ``rows`` (``[package, versions, module, where, kind, template, holes]``, sorted); ``fmt`` 2:
    the earlier format (tests of the conversion)."""
    words = [words_of(r[5]) for r in rows]
    df: dict[str, int] = {}
    for ws in words:
        for w in ws:
            df[w] = df.get(w, 0) + 1
    ranked = [sorted(ws, key=lambda w: (df[w], -len(w), w))[:3] for ws in words]
    buckets: list[tuple[dict, dict, list]] = [({}, {}, []) for _ in range(n)]
    place: dict[int, tuple[int, int]] = {}
    for gid, (row, rk) in enumerate(zip(rows, ranked)):
        if not rk:
            continue  # no literal word: no lookup can reach it
        b = bucket_of(rk[0], n)
        first, _, brows = buckets[b]
        place[gid] = (b, len(brows))
        first.setdefault(rk[0], []).append(len(brows))
        brows.append([gid, *row])
    for gid, rk in enumerate(ranked):
        for w in rk[1:]:
            buckets[bucket_of(w, n)][1].setdefault(w, []).append(list(place[gid]))
    plain = ([_dumps(list(b)) for b in buckets] if fmt == 2 else
             [b"\n".join([_dumps([first, second]), *(_dumps(r) for r in brows)]) for first, second, brows in buckets])
    zdict = b"".join(plain[::ZDICT_STRIDE])[:ZDICT_SIZE]
    blobs = []
    for text in plain:
        z = zlib.compressobj(9, zdict=zdict)
        blobs.append(z.compress(text) + z.flush())
    head = zlib.compress(_dumps(dict(meta, format=fmt, sites=len(rows))), 9)
    offsets, at = [], 0
    for blob in blobs:
        offsets.append(at)
        at += len(blob)
    offsets.append(at)
    return b"".join([next(m for m, f in MAGICS.items() if f == fmt), _U32.pack(n), _U32.pack(len(head)), _U32.pack(len(zdict)), head, zdict,
                     struct.pack(f">{n + 1}I", *offsets), *blobs])


# The buckets decompressed, kept in the cache folder (cachefiles.RAW_SITES: ``RAW_MAGIC | n | offsets[n + 1] | buckets``,
# 8.4 MB for the shipped index) and mapped: a lookup that follows the 2nd/3rd rarest words into ~170 buckets (a
# message no template takes whole) decompressed them in ~16 ms of CPU at every failed run. Written by the first
# process that follows them (decompressing all 1024 buckets, ~0.1 s, once), keyed by the index file's path, size,
# mtime, header and bucket offsets.
RAW_MAGIC = b"GDRSRAW1"


class Store:
    """Read access to an index file: the header at once, each bucket on first use."""

    def __init__(self, data: bytes):
        self.format = MAGICS.get(data[:len(MAGIC)], 0)
        if not self.format:
            raise ValueError("not a raise-site index (format 2 or 3)")
        at = len(MAGIC)
        self.n = _U32.unpack_from(data, at)[0]
        head_len, zdict_len = _U32.unpack_from(data, at + 4)[0], _U32.unpack_from(data, at + 8)[0]
        at += 12
        self.meta: dict = json.loads(zlib.decompress(data[at:at + head_len]))
        at += head_len
        self._zdict = data[at:at + zdict_len]
        at += zdict_len
        self._offsets = struct.unpack_from(f">{self.n + 1}I", data, at)
        self._base = at + 4 * (self.n + 1)
        self._data = data
        self._buckets: dict[int, _Bucket] = {}
        self._raw_key: str | None = None   # the key of its decompressed buckets in the cache folder (``open``)
        self._raw: Any = None              # those buckets mapped, once read or written: (mapping, offsets, base)

    @classmethod
    def open(cls, path: Path) -> Store:
        store = cls(path.read_bytes())
        try:
            st = path.stat()
            from .. import cachefiles
            h = cachefiles.hasher(f"{RAW_MAGIC!r}\0{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode("utf-8",
                                                                                              "surrogatepass"))
            h.update(store._data[:store._base])   # the header, the dictionary and every bucket's offset
            store._raw_key = h.hexdigest()
        except OSError:
            pass
        return store

    def _decompress(self, b: int) -> bytes:
        lo, hi = self._offsets[b], self._offsets[b + 1]
        z = zlib.decompressobj(zdict=self._zdict)
        return z.decompress(self._data[self._base + lo:self._base + hi]) + z.flush()

    def bucket(self, b: int) -> _Bucket:
        """Bucket ``b``, decompressed on first use (its rows are parsed as they are read)."""
        got = self._buckets.get(b)
        if got is None:
            if self._raw is not None:
                mapped, offsets, base = self._raw
                text = bytes(mapped[base + offsets[b]:base + offsets[b + 1]])
            else:
                text = self._decompress(b)
            got = self._buckets[b] = _Bucket(text, self.format)
        return got

    def _map_raw(self, write: bool) -> None:
        """Use the decompressed buckets of the cache folder; ``write``: decompress them all and keep them there when
        they are not (an unwritable or unreadable cache only costs the decompression)."""
        if self._raw is not None or self._raw_key is None:
            return
        import mmap

        from .. import cachefiles
        path = cachefiles.path_of(cachefiles.RAW_SITES, self._raw_key)
        for attempt in (0, 1):
            try:
                with open(path, "rb") as f:
                    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                mapped = None
            if mapped is not None:
                head = 12 + 4 * (self.n + 1)
                if len(mapped) >= head and mapped[:8] == RAW_MAGIC and _U32.unpack_from(mapped, 8)[0] == self.n:
                    offsets = struct.unpack_from(f">{self.n + 1}I", mapped, 12)
                    if len(mapped) == head + offsets[-1]:
                        cachefiles.mark_used(path)
                        self._raw = (mapped, offsets, head)
                        return
                mapped.close()
            if attempt or not write:
                return
            texts = [self._decompress(b) for b in range(self.n)]
            at, offs = 0, []
            for t in texts:
                offs.append(at)
                at += len(t)
            offs.append(at)
            cachefiles.write(cachefiles.RAW_SITES, self._raw_key,
                             b"".join([RAW_MAGIC, _U32.pack(self.n), struct.pack(f">{self.n + 1}I", *offs), *texts]))

    def first(self, word: str) -> list[list]:
        """The rows filed under ``word`` as their rarest word."""
        bucket = self.bucket(bucket_of(word, self.n))
        return [bucket.row(i) for i in bucket.head()[0].get(word, ())]

    def second(self, word: str) -> list[list]:
        """The rows for which ``word`` is the second or third rarest word."""
        refs = self.bucket(bucket_of(word, self.n)).head()[1].get(word, ())
        if refs and self._raw is None:
            self._map_raw(write=True)   # references lead into buckets all over the index: read them decompressed
        return [self.bucket(b).row(i) for b, i in refs]

    def rows(self) -> list[list]:
        """Every row, in gid order (decodes every bucket: tests and tools only)."""
        out = [r for b in range(self.n) for r in self.bucket(b).rows()]
        out.sort(key=lambda r: r[0])
        return out


class _Bucket:
    """One decompressed bucket: ``[first, second]`` and each row parsed from its JSON line when first read."""
    __slots__ = ("_head", "_lines", "_rows")

    def __init__(self, text: bytes, fmt: int):
        if fmt == 2:
            first, second, rows = json.loads(text)
            self._head: list | None = [first, second]
            self._lines: list[bytes] = []
            self._rows: list = rows
        else:
            self._lines = text.split(b"\n")
            self._head = None
            self._rows = [None] * (len(self._lines) - 1)

    def head(self) -> list:
        """``[first, second]``: word -> row indices here; word -> ``[bucket, index]`` of rows elsewhere."""
        if self._head is None:
            self._head = json.loads(self._lines[0])
        return self._head

    def row(self, i: int) -> list:
        got = self._rows[i]
        if got is None:
            got = self._rows[i] = json.loads(self._lines[i + 1])
        return got

    def rows(self) -> list[list]:
        return [self.row(i) for i in range(len(self._rows))]


def read_format1(path: Path) -> tuple[dict, list[list]]:
    """(meta, rows) of a format-1 file (gzip'd JSON): what tools/build_raise_index.py --convert reads."""
    import gzip
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["meta"], doc["sites"]
