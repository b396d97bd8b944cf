"""Build a tiny random Qwen2 model + locally trained BPE tokenizer + tiny GRPO dataset, offline, in seconds.
Condensed from the team corpus recipe shared/real-swift-cpu-recipe.sh (the issue-3 generator supersedes this).
Usage: python make_tiny.py WORK_DIR   (run with the Python of the ms-swift environment)
"""
import json
import os
import random
import sys

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer

work = sys.argv[1]
model_dir = os.path.join(work, "tiny-qwen2")
os.makedirs(model_dir, exist_ok=True)
random.seed(0)
torch.manual_seed(0)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
lines = []
for _ in range(1000):
    a, b = random.randint(0, 20), random.randint(0, 20)
    lines.append(f"user\n{a}+{b}=? assistant\n<think>\n{a} plus {b} is {a+b}\n</think>\n<answer>{a+b}</answer>")
bpe = ByteLevelBPETokenizer()
bpe.train_from_iterator(lines, vocab_size=400, min_frequency=2, special_tokens=SPECIAL, show_progress=False)
tj = json.loads(bpe._tokenizer.to_str())
vocab = {k: v for k, v in tj["model"]["vocab"].items() if k not in SPECIAL}
merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in tj["model"]["merges"]]
vocab = {tok: i for i, tok in enumerate(sorted(vocab, key=vocab.get))}
tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, bos_token=None, eos_token="<|im_end|>",
                     pad_token="<|endoftext|>")
tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
tok.add_tokens(["<|endoftext|>"], special_tokens=True)
tok.chat_template = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
tok.model_max_length = 512
tok.save_pretrained(model_dir)
padded = (len(tok) + 63) // 64 * 64
cfg = Qwen2Config(vocab_size=padded, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=512, tie_word_embeddings=True,
                  bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                  pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"))
model = Qwen2ForCausalLM(cfg).to(torch.float32)
model.save_pretrained(model_dir)
os.makedirs(os.path.join(work, "data"), exist_ok=True)
rng = random.Random(1)
with open(os.path.join(work, "data", "train.jsonl"), "w") as f:
    for _ in range(32):
        a, b = rng.randint(0, 9), rng.randint(0, 9)
        f.write(json.dumps({"messages": [{"role": "user", "content": f"{a}+{b}=?"}],
                            "solution": f"<answer>{a+b}</answer>"}) + "\n")
print("tiny model and data in", work)
