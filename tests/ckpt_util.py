"""Small checkpoint builders for tests: valid files come from the safetensors library's own writer."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

# the tiny Qwen2 of ../shared/real-swift-cpu.md (102,976 parameters, counted by hand in test_ckpt_source)
TINY_CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 448, "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
               "tie_word_embeddings": True, "torch_dtype": "bfloat16"}


def tiny_tensors(dtype=np.float16) -> dict[str, np.ndarray]:
    c = TINY_CONFIG
    h, inter, v, kvd = c["hidden_size"], c["intermediate_size"], c["vocab_size"], 2 * 16
    t = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t.update({p + "self_attn.q_proj.weight": (h, h), p + "self_attn.q_proj.bias": (h,),
                  p + "self_attn.k_proj.weight": (kvd, h), p + "self_attn.k_proj.bias": (kvd,),
                  p + "self_attn.v_proj.weight": (kvd, h), p + "self_attn.v_proj.bias": (kvd,),
                  p + "self_attn.o_proj.weight": (h, h), p + "mlp.gate_proj.weight": (inter, h),
                  p + "mlp.up_proj.weight": (inter, h), p + "mlp.down_proj.weight": (h, inter),
                  p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,)})
    return {k: np.zeros(s, dtype=dtype) for k, s in t.items()}


def torch_like_zip(path: Path, payload: bytes = b"\x80\x02}q\x00.") -> None:
    """A zip laid out like torch.save output (never a real pickle of anything)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/data/0", b"\0" * 4096)


def full_checkpoint(d: Path, *, dtype=np.float16, optimizer_factor: float = 2.0, args: dict | None = None,
                    trainer_state: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    save_file(tiny_tensors(dtype), str(d / "model.safetensors"), metadata={"format": "pt"})
    (d / "config.json").write_text(json.dumps(TINY_CONFIG))
    if optimizer_factor:
        with open(d / "optimizer.pt", "wb") as f:
            f.truncate(int((d / "model.safetensors").stat().st_size * optimizer_factor))
    (d / "args.json").write_text(json.dumps(args or {"tuner_type": "full", "load_args": False,
                                                     "swift_version": "4.6.0", "save_total_limit": None}))
    (d / "trainer_state.json").write_text(json.dumps(trainer_state or {"global_step": 2, "max_steps": 2,
                                                                       "save_steps": 2}))
    return d


def lora_checkpoint(d: Path, *, r: int = 8, targets=("q_proj", "v_proj"), args: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    t = {}
    for i in range(2):
        for m in targets:
            base = f"base_model.model.model.layers.{i}.self_attn.{m}"
            t[base + ".lora_A.weight"] = np.zeros((r, 64), dtype=np.float32)
            t[base + ".lora_B.weight"] = np.zeros((64 if m == "q_proj" else 32, r), dtype=np.float32)
    save_file(t, str(d / "adapter_model.safetensors"))
    (d / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": r, "lora_alpha": 32,
                                                       "target_modules": list(targets),
                                                       "base_model_name_or_path": "tiny-qwen2"}))
    (d / "args.json").write_text(json.dumps(args or {"tuner_type": "lora", "load_args": False,
                                                     "swift_version": "4.6.0"}))
    return d
