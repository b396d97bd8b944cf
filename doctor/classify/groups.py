"""The arithmetic of a failed reshape into groups of ``num_generations`` (the structural batch-divisibility finding,
GD996): what the message's numbers, the run's settings and the progress bar before the failure say about WHY the
step's completions do not form whole groups.

Three accounts, each from the library source:
- the last step: a progress bar that read N-1/N or N/N just before the failure puts it on the run's (epoch's) last
  step, where a dataset that is not a multiple of the global batch leaves a short last batch: transformers'
  Trainer builds the train DataLoader with ``drop_last=args.dataloader_drop_last`` (transformers 5.19.0 trainer.py
  line 1045, the same field since 4.x ``get_train_dataloader``), False by default, so the remainder is a batch of its own; trl and ms-swift
  take the same TrainingArguments field. Cases tulerfeng/Video-R1#31 (the last iteration, maintainer's advice) and
  shibing624/MedicalGPT#452.
- the settings divide: per_device_train_batch_size x processes is a multiple of num_generations, so "make it a
  multiple" cannot be the fix; the batch that reached the grouping was not the one the settings describe.
- fewer values than one group: what per_device_train_batch_size counts changed in trl 0.15. trl 0.14.0 counted
  PROMPTS and repeated each num_generations times inside ``_prepare_inputs`` (grpo_config.py:163 "the number of
  completions will be this value multiplied by num_generations", grpo_trainer.py:417 and :469); trl 0.15.0 counts
  COMPLETIONS: the global batch must be divisible by num_generations (grpo_trainer.py:343-348) and
  ``RepeatRandomSampler`` repeats each prompt num_generations times (grpo_trainer.py:468). A script written for
  one release run with the other, or a sampler/dataloader of its own that bypasses the repeat sampler, hands the
  grouping fewer completions than a group.
Pure: strings and numbers in, strings out. Every number is marked read / computed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import lazyre

_SHAPE = lazyre.compile(r"shape '\[(-?\d+), (\d+)\]' is invalid for input of size (\d+)")
# a reshape with one row per process: `gathered_rewards.view(num_devices, self.num_generations)` (open-r1 forks)
_PER_RANK = lazyre.compile(r"\.view\((?:num_devices|num_processes|world_size|self\.accelerator\.num_processes)\b")
_BAR = lazyre.compile(r"(?<![\d/])(\d+)/(\d+) \[")


@dataclass
class GroupAccount:
    why: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    drop: tuple[str, ...] = ()  # fix lines of the rule the evidence makes moot (substrings)


def last_bar(context: str) -> tuple[int, int] | None:
    """(current, total) of the last progress bar in ``context`` (tqdm's ``12/40 [``), or None."""
    found = None
    for m in _BAR.finditer(context):
        found = (int(m.group(1)), int(m.group(2)))
    return found


def _drop_last(fw: str | None) -> str:
    if fw in ("trl", "unsloth"):
        return "dataloader_drop_last=True in GRPOConfig"  # a script's own flags: doctor/swift/terms.py
    return "--dataloader_drop_last true"


def account(message: str, context: str, batch: int | None, gens: int | None, procs: int | None,
            fw: str | None) -> GroupAccount:
    out = GroupAccount()
    m = _SHAPE.search(message)
    if m is None:
        return out
    rows, k, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if rows > 0:
        out.why.append(f"The reshape expected {rows} x {k} = {rows * k} values (computed) and got {n} (read).")
    bar = last_bar(context)
    mark = "" if procs else " (assumed: no process count in the inputs)"
    procs = procs or 1
    divides = bool(batch and gens and (batch * procs) % gens == 0)
    if divides:
        out.why.append(f"The settings divide: per_device_train_batch_size {batch} (read) x {procs} process(es)"
                       f"{mark} = {batch * procs} (computed) is a multiple of num_generations {gens} (read), so the "
                       f"step's batch was not the one the settings describe.")
        out.drop = ("Make the global generation batch",)
    if bar is not None and bar[1] > 1 and bar[0] >= bar[1] - 1:
        out.why.insert(0, f"The progress bar just before the failure read {bar[0]}/{bar[1]} (read): the failure is "
                          f"at the last step, where a dataset that is not a multiple of the global batch leaves a "
                          f"short last batch (the DataLoader keeps the remainder unless dataloader_drop_last).")
        out.fix.append(f"Drop the short last batch: {_drop_last(fw)}; or trim the dataset to a multiple of the "
                       f"global batch (per-device batch x processes x gradient accumulation).")
        out.drop += ("Make the global generation batch",)
        return out
    if rows > 1 and n != rows * k and n > k and _PER_RANK.search(context):
        out.why.append(f"The reshape has one row per rank (its code reads the device count), and the {rows} ranks' values add up to {n}, not {rows} x {k}: at least one "
                       f"rank's step held another number of completions than the others. Ranks disagree on the batch "
                       f"size on a short, uneven batch, which is what the last batch of a dataset that is not a "
                       f"multiple of the global batch gives.")
        out.fix.append(f"Make the last batch whole: {_drop_last(fw)}, or a dataset size that is a multiple of the "
                       f"global batch (per-device batch x processes x gradient accumulation), or more data / another "
                       f"epoch count so that the last batch is full.")
        out.drop += ("Make the global generation batch",)
        return out
    if n < k and fw == "ms-swift":
        out.why.append(f"The step held {n} value(s) (read), fewer than one group of {k}: the completions that "
                       f"reached the grouping are not num_generations per prompt (a filter, a collator or a sampler "
                       f"of its own changed the batch).")
        out.fix.append("Look for what changes the batch after the settings: a dataset filter or collator dropping "
                       "samples, a custom sampler or dataloader (a plugin), or a trainer override.")
    elif n < k:
        out.why.append(f"The step held {n} value(s) (read), fewer than one group of {k}: the completions that "
                       f"reached the grouping are not num_generations per prompt. What per_device_train_batch_size "
                       f"counts changed in trl 0.15: 0.14 counted prompts (each repeated num_generations times by "
                       f"the trainer), 0.15 and later count completions (a repeat sampler repeats each prompt). A "
                       f"script written for one release run with the other, or a sampler/dataloader of its own that "
                       f"bypasses trl's repeat sampler, gives a step fewer completions than a group.")
        out.fix.append("Install the trl version the training script was written for (its requirements); with trl "
                       "0.15 or later, per_device_train_batch_size counts completions (prompts x num_generations), "
                       "and the trainer's own sampler must stay in place (no custom get_train_dataloader/sampler).")
    elif divides:
        out.fix.append("Look for what changes the batch after the settings: a filter or collator dropping samples, a "
                       "custom sampler or dataloader, or a script written for another trl release (0.14 counted "
                       "prompts in per_device_train_batch_size, 0.15 and later count completions).")
    return out
