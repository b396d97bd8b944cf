"""A wider copy of the tiny Qwen2 model for bench/scoreboard.py's memory-limit cases: the tiny model's tokenizer and
chat template, 16 layers of width 1024 (240M parameters, 480 MB in bfloat16 on disk, about 1 GB in float32 once
loaded). Loading it needs far more memory than the tiny model's few hundred KB, so a limit on the process's address
space that the imports fit in fails at the load, as a real model's does on a smaller machine. Random weights: the
cases that use it never reach a step.

    python wide_model.py SRC_DIR DEST_DIR
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def main(src: Path, dst: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "config.json"):
            shutil.copy2(f, tmp / f.name)
    cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
    layers = 16
    cfg.update(hidden_size=1024, intermediate_size=4096, num_hidden_layers=layers, num_attention_heads=16,
               num_key_value_heads=2, layer_types=["full_attention"] * layers)
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    with torch.device("meta"):          # shapes only: the weights are drawn below, once
        model = Qwen2ForCausalLM(Qwen2Config(**cfg))
    gen = torch.Generator().manual_seed(0)
    state = {}
    for name, p in model.state_dict().items():
        if name == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        state[name] = ((torch.randn(p.shape, generator=gen) * 0.02) if p.dim() > 1 else torch.ones(p.shape)
                       ).to(torch.bfloat16)
    save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    shutil.rmtree(dst, ignore_errors=True)
    tmp.rename(dst)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
