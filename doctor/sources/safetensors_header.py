"""Safetensors headers, read without touching tensor data.

Two readings of the same file: the ``safetensors`` library's own parser (``safe_open`` maps the file and
parses the header; no tensor is read), so we fail exactly where loaders fail, and our own bounds checks
(8-byte header length, JSON header, ``data_offsets`` against the file size) so the report can say why.
Sources never judge: ``HeaderFacts`` records what is there and what is wrong with it.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from .safeio import open_regular

MAX_HEADER = 100_000_000  # the library's own limit (safetensors MAX_HEADER_SIZE)
LFS_MAGIC = b"version https://git-lfs.github.com/spec/"
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
               "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors header: name, dtype and shape."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass
class HeaderFacts:
    """What a safetensors file's header says (the weights are never read)."""
    path: str
    size: int
    header_len: int | None = None
    tensors: list[TensorInfo] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    lib_error: str | None = None       # what safetensors' own parser says, None when it accepts the file
    problems: list[str] = field(default_factory=list)  # our bounds checks: why the file is broken
    lfs: dict[str, str] | None = None  # a git-LFS pointer instead of the file: {"oid":..., "size":...}
    costly: bool = False               # too costly to decode (sources/jsoncost.py): the library is not asked either

    @property
    def ok(self) -> bool:
        return self.lib_error is None and not self.problems and self.lfs is None

    @property
    def data_bytes(self) -> int:
        return sum(t.end - t.begin for t in self.tensors)

    @property
    def numel(self) -> int:
        return sum(t.numel for t in self.tensors)

    def dtypes(self) -> dict[str, int]:
        """dtype -> bytes stored in it."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + (t.end - t.begin)
        return out


U64 = 1 << 64


def _u64(value: object) -> int:
    """A header number as the format stores it (u64): a JSON integer in 0..2**64-1. Anything else (1e999, -4,
    "2", a 400-digit shape) is a malformed entry, never an overflow in arithmetic later."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < U64:
        raise ValueError(value)
    return value


def parse_lfs_pointer(head: bytes) -> dict[str, str] | None:
    if not head.startswith(LFS_MAGIC):
        return None
    out = {}
    for line in head.decode("utf-8", "replace").splitlines():
        k, _, v = line.partition(" ")
        if k in ("oid", "size"):
            out[k] = v.strip()
    return out


def read_header(path: str, size: int, library: bool = True) -> HeaderFacts:
    """Header facts of one ``.safetensors`` file of ``size`` bytes. Reads at most the header bytes. ``library``
    False: the library's parser reads the file only when our own checks found a problem (its message is then the
    loaders' wording of it). `watch` checks each checkpoint as it is saved: safe_open(framework="numpy") imports
    numpy, about 0.15-0.2 s of CPU, as much as the rest of watch spends on a short run; `analyze` and `check-ckpt`
    ask the library every time."""
    facts = HeaderFacts(path, size)
    _own_checks(facts)
    if facts.costly:  # its parser takes as much as json.loads (the 16 MiB header of the test: 245 MiB peak)
        return facts
    if facts.lfs is not None:
        facts.lib_error = "git-LFS pointer, not a safetensors file"
    elif library or facts.problems:
        facts.lib_error = _library_check(path)
    return facts


def _library_check(path: str) -> str | None:
    try:
        import numpy  # noqa: F401  safe_open(framework="numpy") needs it; without it only our own checks run
        from safetensors import safe_open
    except ImportError:
        return None
    try:
        with safe_open(path, framework="numpy") as f:
            f.metadata()
            for k in f.keys():
                f.get_slice(k).get_shape()  # header data only; no tensor bytes are read
    except Exception as e:  # noqa: BLE001 - the library's message is the fact we record
        return f"{type(e).__name__}: {e}".strip()
    return None


def _own_checks(facts: HeaderFacts) -> None:
    size = facts.size
    if size == 0:
        facts.problems.append("the file is empty (0 bytes)")
        return
    try:
        with open_regular(facts.path) as f:
            head = f.read(8)
            if size < 1024 and head.startswith(LFS_MAGIC[:8]):
                facts.lfs = parse_lfs_pointer(head + f.read(1024))
                if facts.lfs is not None:
                    return
            if size < 8:
                facts.problems.append(f"the file has {size} bytes, fewer than the 8-byte header length field")
                return
            (n,) = struct.unpack("<Q", head)
            facts.header_len = n
            if n > size - 8:
                facts.problems.append(f"the header length field says {n:,} bytes but the file has only "
                                      f"{size - 8:,} bytes after it: the header runs past the end of the file "
                                      f"(truncated, or not a safetensors file)")
                return
            if n > MAX_HEADER:
                facts.problems.append(f"the header length field says {n:,} bytes, above the library's "
                                      f"{MAX_HEADER:,}-byte limit")
                return
            raw = f.read(n)
    except OSError as e:
        facts.problems.append(f"cannot read the file ({e.strerror})")
        return
    from .jsoncost import too_costly
    costly = too_costly(raw)  # the library allows 100 MB of header: of small containers, 2.5 GB to decode
    if costly is not None:
        facts.problems.append(f"the header: {costly}")
        facts.costly = True
        return
    try:
        hdr = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        facts.problems.append(f"the {n:,}-byte header is not valid JSON ({str(e)[:80]})")
        return
    if not isinstance(hdr, dict):
        facts.problems.append("the header is JSON but not an object")
        return
    meta = hdr.pop("__metadata__", None)
    if isinstance(meta, dict):
        facts.metadata = {str(k): str(v) for k, v in meta.items()}
    data_len = size - 8 - n
    for name, spec in hdr.items():
        try:
            dtype = str(spec["dtype"])
            shape = tuple(_u64(s) for s in spec["shape"])
            begin, end = (_u64(x) for x in spec["data_offsets"])
        except (KeyError, TypeError, ValueError):
            facts.problems.append(f"tensor {name!r} has a malformed entry in the header")
            continue
        t = TensorInfo(name, dtype, shape, begin, end)
        facts.tensors.append(t)
        width = DTYPE_BYTES.get(dtype)
        if width is None:
            facts.problems.append(f"tensor {name!r} has an unknown dtype {dtype!r}")
            continue
        need = t.numel * int(width * 8) // 8  # whole integers: a shape of 10**400 overflows any float
        if end - begin != need:
            shown = f"{need:,}" if need < U64 else f"more than {U64 - 1:,}"  # 10**400 has too many digits to print
            dims = list(shape) if len(shape) <= 8 else f"{len(shape)} dims"
            facts.problems.append(f"tensor {name!r} ({dtype} {dims}) needs {shown} bytes but its data_offsets span "
                                  f"{end - begin:,}")
    if not facts.tensors:
        return
    facts.tensors.sort(key=lambda t: (t.begin, t.end))
    past = [t for t in facts.tensors if t.end > data_len]
    if past:
        worst = max(past, key=lambda t: t.end)
        facts.problems.append(f"{len(past)} tensor(s) end past the end of the file: {worst.name!r} ends at data byte "
                              f"{worst.end:,} but the file holds {data_len:,} data bytes ({worst.end - data_len:,} "
                              f"bytes missing: the file is truncated)")
        return
    pos = 0
    for t in facts.tensors:
        if t.begin != pos:
            what = "overlaps the previous tensor" if t.begin < pos else f"leaves a gap of {t.begin - pos:,} bytes"
            facts.problems.append(f"tensor {t.name!r} starts at data byte {t.begin:,}: it {what}")
            break
        pos = t.end
    if data_len > pos:
        facts.problems.append(f"{data_len - pos:,} bytes follow the last tensor: the file is longer than its header "
                              f"says (a partial overwrite or an appended file)")
