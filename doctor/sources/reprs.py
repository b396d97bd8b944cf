"""Settings printed into a log by trl / transformers scripts, read back: the configuration dataclasses' reprs and
open-r1-style YAML recipes pasted whole.

- transformers' ``TrainingArguments.__str__`` (and ``__repr__``, the same; every trl config subclasses it) prints
  ``GRPOConfig(`` on a line of its own, one ``field=value,`` a line (strings unquoted, enums as
  ``IntervalStrategy.NO``) and ``)``: trl 0.29.1 / transformers 5.19.0, ``print(GRPOConfig(output_dir='x'))``;
  open-r1's ``src/open_r1/grpo.py`` logs it as ``Training parameters GRPOConfig(``...
- plain dataclasses (trl's ``ScriptArguments``, ``ModelConfig``, open-r1's ``GRPOScriptArguments``) print on one
  line: ``ModelConfig(model_name_or_path='Qwen/...', torch_dtype='bfloat16', use_peft=False)``; open-r1 logs
  ``Model parameters ModelConfig(...)`` and ``Script parameters GRPOScriptArguments(...)``.
- an open-r1 recipe (recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml): top-level ``key: value`` lines; read only
  when several known GRPO settings stand together (``YamlBlock``), never from one stray ``beta: 0.1``.

A call in code (``args = GRPOConfig(num_generations=8)``, ``return ModelConfig(``) is not a dump: its values may be
expressions. Sources never judge.
"""
from __future__ import annotations

from typing import Any

from .. import lazyre
from .argv import parse_value

# the dataclasses whose dumps hold a run's settings, and the framework each implies (None: transformers' own,
# printed by any Trainer script)
CLASSES: dict[str, str | None] = {
    "GRPOConfig": "trl", "GRPOScriptArguments": "trl", "ScriptArguments": "trl", "ModelConfig": "trl",
    "SFTConfig": "trl", "DPOConfig": "trl", "RLOOConfig": "trl", "TrainingArguments": None,
    "Seq2SeqTrainingArguments": None,
}
LITERALS = tuple(f"{c}(" for c in CLASSES)
_START = lazyre.compile(r"(?:^|(?<=[\s:=(\[]))(" + "|".join(CLASSES) + r")\(")
_CODE_BEFORE = lazyre.compile(r"(?:\b(?:return|raise|yield|class|def|lambda|await)|[=(,\[]|\w\.)\s*$")
_ENUM = lazyre.compile(r"^<?[A-Z]\w*\.([A-Z][A-Z0-9_]*)(?::\s*'([^']*)'>)?$")
_IDENT = lazyre.compile(r"^[A-Za-z_]\w*$")
KV = lazyre.compile(r"^(\w+)=(.*?),?$")


def value(text: str) -> Any:
    """A field's value as a dump prints it: ``IntervalStrategy.NO`` / ``<IntervalStrategy.NO: 'no'>`` -> 'no'
    (transformers' enums' values are their names in lowercase), else ``parse_value``."""
    t = text.strip()
    m = _ENUM.match(t)
    if m:
        return m.group(2) if m.group(2) is not None else m.group(1).lower()
    return parse_value(t)


def dump_start(text: str) -> tuple[str, bool] | None:
    """(class, whole) when the line opens a config dump: ``whole`` False for the multi-line form (the line ends at
    the class's parenthesis), True for a one-line repr; None for anything else (a call in code, a mention)."""
    m = _START.search(text)
    if m is None:
        return None
    if _CODE_BEFORE.search(text[:m.start()]):
        return None
    rest = text[m.end():].rstrip()
    if not rest:
        return m.group(1), False
    return (m.group(1), True) if _IDENT.match(rest.split("=", 1)[0]) and "=" in rest else None


def one_line(text: str) -> tuple[str, dict[str, Any]] | None:
    """(class, fields) of a one-line dataclass repr in ``text``; None unless every item is ``name=value`` and the
    parenthesis closes."""
    m = _START.search(text)
    if m is None or _CODE_BEFORE.search(text[:m.start()]):
        return None
    items: list[str] = []
    depth, quote, cur = 0, "", []
    i = m.end()
    closed = False
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch in "([{<":
            depth += 1
            cur.append(ch)
        elif ch in ")]}>" and depth:
            depth -= 1
            cur.append(ch)
        elif ch == ")":
            closed = True
            break
        elif ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if not closed:
        return None
    if "".join(cur).strip():
        items.append("".join(cur))
    out: dict[str, Any] = {}
    for it in items:
        name, eq, val = it.strip().partition("=")
        if not eq or not _IDENT.match(name):
            return None  # a positional argument, `...`: code, not a repr
        out[name] = value(val)
    return (m.group(1), out) if len(out) >= 2 else None


# the settings that make a block of `key: value` lines a GRPO recipe (trl GRPOConfig fields, ms-swift's flags)
GRPO_KEYS = frozenset({
    "num_generations", "max_completion_length", "use_vllm", "vllm_mode", "vllm_gpu_memory_utilization",
    "vllm_tensor_parallel_size", "vllm_server_host", "vllm_server_port", "steps_per_generation",
    "generation_batch_size", "num_iterations", "reward_weights", "vllm_max_model_length", "vllm_enable_sleep_mode",
    "num_generations_eval", "rlhf_type"})
BATCH_KEYS = frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "max_prompt_length", "beta",
                        "temperature", "learning_rate", "num_train_epochs", "max_steps", "per_device_eval_batch_size",
                        "bf16", "gradient_checkpointing", "save_steps", "seed", "max_length", "epsilon", "loss_type"})
# LLaMA-Factory's own settings (hparams/*_args.py) that its example configs open with: the lines that let such a
# config reach the reader (its other keys are read once the block shows stage and finetuning_type)
LLAMAFACTORY_LINES = ("model_name_or_path", "stage", "finetuning_type", "lora_target", "dataset", "template",
                      "cutoff_len", "output_dir", "adapter_name_or_path", "deepspeed", "quantization_bit", "val_size")
_RECIPE_KEYS = GRPO_KEYS | BATCH_KEYS
YAML_LITERALS = tuple(f"{k}:" for k in sorted(_RECIPE_KEYS | set(LLAMAFACTORY_LINES)))
_YAML_LINE = lazyre.compile(r"^([a-z][a-z0-9_]*):[ \t]+([^\s#][^#]*?)\s*(?:#.*)?$")
_GAP = 80  # lines between two settings of one block, at most
LLAMAFACTORY_KEYS = frozenset({"stage", "finetuning_type"})


class YamlBlock:
    """Top-level ``key: value`` lines of a config pasted in a log, gathered until their keys show a recipe: a GRPO
    recipe (at least three known settings, one of them GRPO's own: ``GRPO_KEYS``), or a LLaMA-Factory config (its own
    ``stage`` and ``finetuning_type``, hparams/finetuning_args.py, beside any of its settings). ``feed`` returns the
    settings to apply (those held back until the block qualified, then each new one), else {}."""

    def __init__(self) -> None:
        self.pending: dict[str, Any] = {}
        self.others: dict[str, Any] = {}   # keys no GRPO recipe knows: a LLaMA-Factory config's, until it qualifies
        self.last: tuple[str, int] | None = None
        self.open = ""   # "grpo" or "llamafactory" once the block qualified

    def feed(self, text: str, path: str, line: int) -> dict[str, Any]:
        m = _YAML_LINE.match(text)
        if m is None:
            return {}
        key = m.group(1)
        known = key in _RECIPE_KEYS
        if not known and self.open == "grpo":
            return {}
        if self.last is None or self.last[0] != path or line - self.last[1] > _GAP or line < self.last[1]:
            self.pending, self.others, self.open = {}, {}, ""
        self.last = (path, line)
        raw = m.group(2).strip()
        val = parse_value(raw[1:-1] if raw[:1] in "'\"" and raw[-1:] == raw[:1] else raw)
        if self.open:
            return {key: val}
        (self.pending if known else self.others)[key] = val
        if len(self.pending) >= 3 and any(k in GRPO_KEYS for k in self.pending):
            self.open = "grpo"
            out, self.pending, self.others = self.pending, {}, {}
            return out
        if LLAMAFACTORY_KEYS <= (self.pending.keys() | self.others.keys()):
            self.open = "llamafactory"
            out = {**self.others, **self.pending}
            self.pending, self.others = {}, {}
            return out
        return {}


__all__ = ["BATCH_KEYS", "CLASSES", "GRPO_KEYS", "KV", "LITERALS", "YAML_LITERALS", "YamlBlock", "dump_start",
           "one_line", "value"]
