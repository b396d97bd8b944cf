"""Build the tiny local model, tokenizer and datasets that tools/swiftgen.py trains on.

Runs under the Python that has ms-swift (it needs torch, tokenizers and transformers); nothing is
downloaded. Usage: python swiftgen_tiny.py WORK_DIR
Writes WORK_DIR/tiny-qwen2/ (random Qwen2, bf16, ~103k parameters, byte-level BPE trained here) and
WORK_DIR/data/{train,val,sft,no_solution}.jsonl. Seeded: the same files every time.
"""
from __future__ import annotations

import json
import os
import random
import sys

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\n" + SYSTEM + "<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if message['role'] != 'system' %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def build_tokenizer() -> Qwen2Tokenizer:
    rnd = random.Random(0)
    lines = []
    for _ in range(3000):
        a, b = rnd.randint(0, 20), rnd.randint(0, 20)
        lines.append(f"user\n{a}+{b}=? assistant\n<think>\n{a} plus {b} is {a + b}\n</think>\n<answer>{a + b}</answer>")
        lines.append("system\n" + SYSTEM)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(lines, vocab_size=600, min_frequency=2, special_tokens=SPECIAL, show_progress=False)
    model = json.loads(bpe._tokenizer.to_str())["model"]
    vocab = {k: v for k, v in model["vocab"].items() if k not in SPECIAL}
    # transformers 5.x wants merges as tuples ("a b" strings raise "failed to extract enum PyMerges")
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    vocab = {tok: i for i, tok in enumerate(sorted(vocab, key=vocab.get))}  # specials go last, as in Qwen
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=None,
                         eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.add_tokens(["<|endoftext|>"], special_tokens=True)
    # the reasoning tags are single tokens, so a formatted answer fits in --max_completion_length 16
    tok.add_tokens(["<think>", "</think>", "<answer>", "</answer>"])
    tok.chat_template = CHAT_TEMPLATE
    tok.model_max_length = 512
    return tok


def build_model(tok: Qwen2Tokenizer, model_dir: str) -> int:
    torch.manual_seed(0)
    padded = (len(tok) + 63) // 64 * 64
    pad = tok.convert_tokens_to_ids("<|endoftext|>")
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen2Config(vocab_size=padded, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, rope_theta=10000.0, bos_token_id=pad, eos_token_id=eos,
                      pad_token_id=pad)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.generation_config.eos_token_id = [eos, pad]
    model.generation_config.pad_token_id = pad
    model.save_pretrained(model_dir)
    return sum(p.numel() for p in model.parameters())


def write_data(data_dir: str) -> None:
    os.makedirs(data_dir, exist_ok=True)
    rnd = random.Random(1)

    def rows(n):
        for _ in range(n):
            a, b = rnd.randint(0, 9), rnd.randint(0, 9)
            yield a, b

    def dump(name, items):
        with open(os.path.join(data_dir, name), "w", encoding="utf-8") as f:
            for item in items:
                f.write(json.dumps(item) + "\n")

    # `solution` is the column swift's `accuracy` ORM (MathAccuracy) reads
    dump("train.jsonl", [{"messages": [{"role": "user", "content": f"{a}+{b}=?"}],
                          "solution": f"<answer>{a + b}</answer>"} for a, b in rows(32)])
    dump("val.jsonl", [{"messages": [{"role": "user", "content": f"{a}+{b}=?"}],
                        "solution": f"<answer>{a + b}</answer>"} for a, b in rows(8)])
    dump("sft.jsonl", [{"messages": [{"role": "user", "content": f"{a}+{b}=?"},
                                     {"role": "assistant", "content": f"<think>\n{a}+{b}={a + b}\n</think>\n<answer>{a + b}</answer>"}]}
                       for a, b in rows(2000)])
    # the same prompts with the answer under another name: `accuracy` finds no `solution` column
    dump("no_solution.jsonl", [{"messages": [{"role": "user", "content": f"{a}+{b}=?"}], "answer": str(a + b)}
                               for a, b in rows(32)])


def main(work: str) -> None:
    model_dir = os.path.join(work, "tiny-qwen2")
    os.makedirs(model_dir, exist_ok=True)
    tok = build_tokenizer()
    tok.save_pretrained(model_dir)
    n = build_model(tok, model_dir)
    write_data(os.path.join(work, "data"))
    print(f"tiny model {model_dir}: vocab {len(tok)}, {n} parameters; data in {work}/data")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
