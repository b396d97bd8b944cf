"""Benchmark: check-ckpt on a simulated Llama-70B sharded checkpoint (30 shards, ~141 GB apparent size).

The shards are sparse files: real safetensors headers (Llama-3-70B tensor names and shapes, bf16) and holes
where the tensor data would be, so the benchmark needs no disk space. It proves that checking reads headers
only: reading 141 GB would take minutes.

    python bench/bench_ckpt.py [--keep DIR]

Prints the time of the in-process check (best of 5) and of one `grpo-doctor check-ckpt` process.
"""
from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "hidden_size": 8192,
          "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
          "tie_word_embeddings": False, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-05}
N_SHARDS = 30


def llama_tensors(cfg: dict) -> list[tuple[str, list[int]]]:
    h, inter, v, kv = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_key_value_heads"]
    hd = h // cfg["num_attention_heads"]
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", [h, h]), (p + "self_attn.k_proj.weight", [kv * hd, h]),
                (p + "self_attn.v_proj.weight", [kv * hd, h]), (p + "self_attn.o_proj.weight", [h, h]),
                (p + "mlp.gate_proj.weight", [inter, h]), (p + "mlp.up_proj.weight", [inter, h]),
                (p + "mlp.down_proj.weight", [h, inter]), (p + "input_layernorm.weight", [h]),
                (p + "post_attention_layernorm.weight", [h])]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def write_sparse_safetensors(path: Path, tensors: list[tuple[str, list[int]]], width: int = 2) -> int:
    hdr: dict = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape in tensors:
        n = width
        for s in shape:
            n *= s
        hdr[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.truncate(8 + len(raw) + off)  # a hole: no data blocks are written
    return off


def build(root: Path) -> Path:
    run = root / "run" / "v0-20261122-000000"
    ck = run / "checkpoint-500"
    ck.mkdir(parents=True)
    tensors = llama_tensors(CONFIG)
    total_bytes = sum(2 * _numel(s) for _, s in tensors)
    target = total_bytes / N_SHARDS
    shards: list[list[tuple[str, list[int]]]] = [[] for _ in range(N_SHARDS)]
    acc = 0
    for t in tensors:  # like transformers' sharding: fill each shard up to the target size, in order
        shards[min(N_SHARDS - 1, int(acc // target))].append(t)
        acc += 2 * _numel(t[1])
    shards = [s for s in shards if s]
    n = len(shards)
    wm = {}
    total = 0
    for i, group in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{n:05d}.safetensors"
        total += write_sparse_safetensors(ck / name, group)
        wm.update({t: name for t, _ in group})
    (ck / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": wm}))
    (ck / "config.json").write_text(json.dumps(CONFIG))
    args = {"tuner_type": "full", "load_args": False, "save_total_limit": None, "save_only_model": False,
            "swift_version": "4.6.0", "torch_dtype": "bfloat16", "deepspeed": "zero3", "model": "Llama-3-70B"}
    (ck / "args.json").write_text(json.dumps(args))
    (run / "args.json").write_text(json.dumps(args))
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": 500, "max_steps": 1000, "save_steps": 500}))
    ds = ck / "global_step500"
    ds.mkdir()
    for r in range(8):  # ZeRO-3, 8 ranks: fp32 master weights + 2 Adam moments = 12 bytes/param over 8 ranks
        with open(ds / f"bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt", "wb") as f:
            f.truncate(12 * total // 2 // 8)
        with open(ds / f"zero_pp_rank_{r}_mp_rank_00_model_states.pt", "wb") as f:
            f.truncate(1_500_000)
    (ck / "latest").write_text("global_step500")
    print(f"built {ck}: {n} shards, {len(tensors)} tensors, {total / 1e9:.1f} GB of weights (sparse), "
          f"{sum(p.stat().st_size for p in ck.rglob('*') if p.is_file()) / 1e9:.1f} GB apparent in all")
    return ck


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="build here and keep it")
    a = ap.parse_args()
    base = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    ck = build(base)
    from doctor.ckpt import check_paths
    times = []
    rep = None
    for _ in range(5):
        t = time.perf_counter()
        rep = check_paths([str(ck)])
        times.append(time.perf_counter() - t)
    print(f"in-process check_paths: best {min(times) * 1000:.1f} ms, median {sorted(times)[2] * 1000:.1f} ms "
          f"(5 runs); findings: {', '.join(f.rule_id for f in rep.findings) or 'none'}")
    exe = [sys.executable, "-m", "doctor.cli", "check-ckpt", str(ck), "--format", "json"]
    t = time.perf_counter()
    p = subprocess.run(exe, capture_output=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "doctor.cli", "--version"], capture_output=True, cwd=ROOT, check=False)
    startup = time.perf_counter() - t
    print(f"grpo-doctor check-ckpt process: {wall:.2f} s wall (exit {p.returncode}); "
          f"interpreter + import startup alone (--version): {startup:.2f} s")
    if not a.keep:
        import shutil
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
