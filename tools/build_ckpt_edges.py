"""Rebuild the built checkpoint edge cases in fixtures/ckpt/edge-* from the real checkpoints there.

Each edge case is a copy of a real ms-swift checkpoint with one deterministic damage (truncation, a missing
shard, a git-LFS pointer, a header length past the end, a zero-byte file, a cut optimizer.pt, an adapter
whose config does not match). Run from the repository root:

    python tools/build_ckpt_edges.py

No tensor is loaded: the damage is done on bytes, and the re-sharding copies each tensor's byte span as is.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CK = ROOT / "fixtures" / "ckpt"
FULL = "real-full-bf16-save-only-model"      # a whole real checkpoint without optimizer/rng/scheduler
FULL_OPT = "real-full-bf16"                  # with optimizer.pt
LORA = "real-lora-healthy"


def _only_ckpt(case: str) -> Path:
    found = sorted(p for p in (CK / case).rglob("checkpoint-*") if p.is_dir())
    return found[-1]


def _fresh(name: str, src_case: str) -> Path:
    dst = CK / name
    if dst.exists():
        shutil.rmtree(dst)
    ck = dst / "checkpoint-2"
    shutil.copytree(_only_ckpt(src_case), ck)
    return ck


def _prov(name: str, src_case: str, what: str, expect: dict) -> None:
    src = _only_ckpt(src_case).relative_to(CK)
    lines = [f'source = "built by tools/build_ckpt_edges.py from the real checkpoint fixtures/ckpt/{src}"',
             f'description = "{what}"', "invented = false", 'check = ["checkpoint-2"]']
    for k, v in expect.items():
        lines.append(f"{k} = {json.dumps(v)}")
    (CK / name / "provenance.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _header(path: Path) -> tuple[int, dict]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return n, json.loads(raw[8:8 + n])


def truncated() -> None:
    ck = _fresh("edge-truncated-safetensors", FULL)
    p = ck / "model.safetensors"
    size = p.stat().st_size
    with open(p, "r+b") as f:
        f.truncate(size - 4096)
    _prov("edge-truncated-safetensors", FULL, "model.safetensors cut 4096 bytes short (a copy or save that stopped)",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def zero_byte() -> None:
    ck = _fresh("edge-zero-byte-weights", FULL)
    (ck / "model.safetensors").write_bytes(b"")
    _prov("edge-zero-byte-weights", FULL, "model.safetensors is 0 bytes (a save on a full disk)",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def header_past_end() -> None:
    ck = _fresh("edge-header-past-end", FULL)
    p = ck / "model.safetensors"
    size = p.stat().st_size
    with open(p, "r+b") as f:
        f.write(struct.pack("<Q", size * 4))
    _prov("edge-header-past-end", FULL, "the 8-byte header length field points past the end of model.safetensors",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def lfs_pointer() -> None:
    ck = _fresh("edge-lfs-pointer", FULL)
    p = ck / "model.safetensors"
    data = p.read_bytes()
    p.write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
                 f"size {len(data)}\n")
    _prov("edge-lfs-pointer", FULL, "model.safetensors replaced by its git-LFS pointer (a clone without git lfs pull)",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def _reshard(ck: Path, n_shards: int = 2) -> list[str]:
    """Split model.safetensors into n shards + model.safetensors.index.json, copying byte spans."""
    p = ck / "model.safetensors"
    raw = p.read_bytes()
    n, hdr = _header(p)
    meta = hdr.pop("__metadata__", {})
    data = raw[8 + n:]
    names = sorted(hdr, key=lambda k: hdr[k]["data_offsets"][0])
    per = -(-len(names) // n_shards)
    wm, shard_files, total = {}, [], 0
    for i in range(n_shards):
        part = names[i * per:(i + 1) * per]
        shard = f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors"
        h, blob, off = {"__metadata__": meta}, b"", 0
        for t in part:
            b, e = hdr[t]["data_offsets"]
            h[t] = {"dtype": hdr[t]["dtype"], "shape": hdr[t]["shape"], "data_offsets": [off, off + e - b]}
            blob += data[b:e]
            off += e - b
            wm[t] = shard
        hb = json.dumps(h, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        (ck / shard).write_bytes(struct.pack("<Q", len(hb)) + hb + blob)
        shard_files.append(shard)
        total += off
    p.unlink()
    (ck / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                 "weight_map": wm}, indent=2))
    return shard_files


def missing_shard() -> None:
    ck = _fresh("edge-missing-shard", FULL)
    shards = _reshard(ck)
    (ck / shards[-1]).unlink()
    _prov("edge-missing-shard", FULL, "the real weights re-sharded in two (byte spans copied) and shard 2 deleted",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def sharded_ok() -> None:
    ck = _fresh("edge-sharded-ok", FULL)
    _reshard(ck)
    _prov("edge-sharded-ok", FULL, "the real weights re-sharded in two with a correct index: a control",
          {"expect_no_error": True, "forbid_rules": ["GD802"]})


def index_total_size() -> None:
    ck = _fresh("edge-index-total-size", FULL)
    _reshard(ck)
    idx = ck / "model.safetensors.index.json"
    d = json.loads(idx.read_text())
    d["metadata"]["total_size"] = d["metadata"]["total_size"] * 2
    idx.write_text(json.dumps(d, indent=2))
    _prov("edge-index-total-size", FULL, "re-sharded in two, then the index's total_size doubled (an index from "
          "another save)", {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def cut_optimizer() -> None:
    ck = _fresh("edge-cut-optimizer", FULL_OPT)
    p = ck / "optimizer.pt"
    with open(p, "r+b") as f:
        f.truncate(p.stat().st_size // 2)
    _prov("edge-cut-optimizer", FULL_OPT, "optimizer.pt (a torch zip) cut in half: no zip end record; never unpickled",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def adapter_mismatch() -> None:
    ck = _fresh("edge-adapter-config-mismatch", LORA)
    p = ck / "adapter_config.json"
    d = json.loads(p.read_text())
    d["r"] = int(d["r"]) * 2
    p.write_text(json.dumps(d, indent=2))
    _prov("edge-adapter-config-mismatch", LORA, "adapter_config.json r doubled: the tensors no longer match it",
          {"expect_category": "checkpoint-corrupt", "expect_rules": ["GD802"]})


def main() -> None:
    for fn in (truncated, zero_byte, header_past_end, lfs_pointer, missing_shard, sharded_ok, index_total_size,
               cut_optimizer, adapter_mismatch):
        fn()
        print("built", fn.__name__)


if __name__ == "__main__":
    main()
