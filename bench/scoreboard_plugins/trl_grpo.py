"""A small TRL GRPOTrainer script for bench/scoreboard.py: the tiny local model, the tiny math data, one reward.

    python trl_grpo.py --model DIR --dataset FILE --output_dir DIR
                       --reward noisy|raising|stuck|constant|killed|short|slow_first|none|rank_stall
                       [--num_generations 4] [--per_device_train_batch_size 4] [--max_steps 4] [--learning_rate 1e-5]
                       [--max_grad_norm 1.0] [--ok_calls 0] [--max_completion_length 8] [--import MODULE]
                       [--resume_from_checkpoint DIR] [--bf16] [--raw_columns] [--pg_timeout_s N]
    torchrun --nproc_per_node 2 trl_grpo.py ...     (2 gloo ranks on CPU)

Faults are the same as the ms-swift plugins' (faults.py): a reward that raises, never returns after --ok_calls calls
(writes the time it began to $SCOREBOARD_FAULT_FILE), or gives every completion the same score; the rest come from
the arguments (a batch that is not a multiple of num_generations, a learning rate that diverges, --import of a module
that is not installed, bf16 on a machine without a GPU, rows passed with their `messages` column where GRPOTrainer
reads `prompt`, a resume from a checkpoint the scoreboard damaged). Under torchrun, --pg_timeout_s N sets the process
group up before the trainer with a timeout of N seconds (torch.distributed.init_process_group(backend="gloo",
timeout=...)): what a user does because transformers passes no timeout to a CPU process group (training_args.py,
5.19: `ddp_timeout` only reaches non-CPU backends), and accelerate then keeps the group it finds; --reward rank_stall
makes only rank $SCOREBOARD_RANK (default 1) stall in its reward call after --ok_calls calls, so the other rank waits
in the next collective until gloo's timeout.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import signal
import time


def _mark_fault() -> None:
    path = os.environ.get("SCOREBOARD_FAULT_FILE")
    if path and not os.path.exists(path):
        with open(path, "w") as f:
            f.write(repr(time.time()))


def make_reward(kind: str, ok_calls: int):
    calls = {"n": 0}

    def noisy(completions, **kwargs):
        return [random.random() for _ in completions]

    def raising(completions, **kwargs):
        raise ValueError(f"judge_score: cannot score completions of lengths {[len(str(c)) for c in completions]}")

    def stuck(completions, **kwargs):
        calls["n"] += 1
        if calls["n"] > ok_calls:
            _mark_fault()
            while True:
                time.sleep(3600)
        return [random.random() for _ in completions]

    def constant(completions, **kwargs):
        return [1.0 for _ in completions]

    def killed(completions, **kwargs):   # the kernel's OOM killer: SIGKILL after ok_calls calls
        calls["n"] += 1
        if calls["n"] > ok_calls:
            _mark_fault()
            os.kill(os.getpid(), signal.SIGKILL)
        return [random.random() for _ in completions]

    def slow_first(completions, **kwargs):   # healthy, but its first call waits on a cold judge (12 s)
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(float(os.environ.get("SCOREBOARD_FIRST_S", "12")))
        return [random.random() for _ in completions]

    def short(completions, **kwargs):    # drops the completion it cannot parse: one score too few
        return [random.random() for _ in completions][:-1]

    def returns_none(completions, **kwargs):    # forgot its return statement
        _mark_fault()
        return None

    def rank_stall(completions, **kwargs):   # one rank's judge call never returns; the other ranks go on
        calls["n"] += 1
        if calls["n"] > ok_calls and os.environ.get("RANK", "0") == os.environ.get("SCOREBOARD_RANK", "1"):
            _mark_fault()
            while True:
                time.sleep(3600)
        return [random.random() for _ in completions]

    fn = {"noisy": noisy, "raising": raising, "stuck": stuck, "constant": constant, "killed": killed, "slow_first": slow_first,
          "short": short, "none": returns_none, "rank_stall": rank_stall}[kind]
    fn.__name__ = f"{kind}_reward"
    return fn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--output_dir", required=True)
    ap.add_argument("--reward", default="noisy")
    ap.add_argument("--num_generations", type=int, default=4)
    ap.add_argument("--per_device_train_batch_size", type=int, default=4)
    ap.add_argument("--max_steps", type=int, default=4)
    ap.add_argument("--learning_rate", type=float, default=1e-5)
    ap.add_argument("--max_grad_norm", type=float, default=1.0)
    ap.add_argument("--ok_calls", type=int, default=0)
    ap.add_argument("--max_completion_length", type=int, default=8)
    ap.add_argument("--import", dest="imports", action="append", default=[])
    ap.add_argument("--resume_from_checkpoint")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--raw_columns", action="store_true", help="pass the rows as they are (messages, not prompt)")
    ap.add_argument("--pg_timeout_s", type=float, help="under torchrun: the gloo process group's timeout, in seconds")
    a = ap.parse_args()
    for name in a.imports:
        importlib.import_module(name)
    import midsave  # beside this script: SIGTERM mid-save when $SCOREBOARD_SIGTERM_IN_SAVE names a file
    midsave.install()

    if a.pg_timeout_s and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from datetime import timedelta

        import torch.distributed as dist
        dist.init_process_group(backend="gloo", timeout=timedelta(seconds=a.pg_timeout_s))

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    rows = [json.loads(line) for line in open(a.dataset, encoding="utf-8")]
    ds = Dataset.from_list(rows if a.raw_columns else [{"prompt": r["messages"], "solution": r["solution"]} for r in rows])
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype="float32")
    cfg = GRPOConfig(output_dir=a.output_dir, num_generations=a.num_generations,
                     per_device_train_batch_size=a.per_device_train_batch_size, max_steps=a.max_steps,
                     learning_rate=a.learning_rate, max_grad_norm=a.max_grad_norm,
                     max_completion_length=a.max_completion_length,
                     logging_steps=1, save_steps=2, report_to=[], use_cpu=not a.bf16, bf16=a.bf16, seed=42,
                     dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=[make_reward(a.reward, a.ok_calls)],
                          args=cfg, train_dataset=ds)
    trainer.train(resume_from_checkpoint=a.resume_from_checkpoint)


if __name__ == "__main__":
    main()
