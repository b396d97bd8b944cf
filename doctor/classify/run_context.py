"""What the run around an exception shows of the machinery it ran in, for exceptions printed without frames of their
own (an issue's title, a one-line excerpt): DeepSpeed, its ZeRO stage, a checkpoint being loaded. The structural
table's entries with ``run_shows`` ask for these facts where the stack would otherwise have shown them. Pure: reads
the state's arguments and kept lines only.

Each fact carries where it was read (a log line, or the run's arguments) so that a finding can say so."""
from __future__ import annotations

from typing import Any

from .. import lazyre

# word edges that a CJK character next to a Latin word does not break ("在zero-stage 3下")
_L, _R = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"
# DeepSpeed's own log lines and a person's words for it; "ds_config" is the usual name of its JSON, zero_pp_rank_ its
# checkpoint files' prefix, "ZeRO" (in that case) its own spelling
_DEEPSPEED = lazyre.compile(rf"(?i:{_L}deep[-_ ]?speed{_R}|{_L}deepspeed_config(?:_file)?{_R}|{_L}ds_config{_R}|{_L}ds_z[0-3]|zero_pp_rank_|zero_optimization)"
                            rf"|{_L}ZeRO{_R}")
# ZeRO stage 3 as DeepSpeed prints it ("Creating fp16 ZeRO stage 3 optimizer", "zero_optimization.stage=3") and as
# people write it ("zero3", "zero-stage 3", "ZeRO-3", "ds_z3_config.json"); a CJK character may follow directly
# (and its config file's usual names: "zero3.json", "ds_z3_config.json", "deepspeed_config_stage3.json")
ZERO3 = lazyre.compile(rf"(?i){_L}zero[-_ ]?(?:stage[-_ ]?)?3(?![0-9])|{_L}ds_z3|['\"]stage['\"]\s*:\s*3(?![0-9])"
                       r"|[_-]stage[-_]?3\.json|zero_optimization\.stage\W{0,3}3(?![0-9])")
# a package list or an environment report names what is installed, not what the run used ("deepspeed==0.16.4")
_INSTALLED = lazyre.compile(rf"(?i){_L}deep[-_ ]?speed\s*(?:==|>=|:|\s)\s*v?\d")
# a checkpoint being read back: DeepSpeed's engine (load_checkpoint, "loading checkpoint", "checkpoint file list"),
# transformers' resume ("Continuing training from checkpoint", resume_from_checkpoint), a person's "resume"
_LOADING = lazyre.compile(rf"(?i)load_checkpoint|resume_from_checkpoint|{_L}resum(?:e|es|ed|ing){_R}|loading checkpoint"
                          r"|checkpoint file list|continuing training from checkpoint|恢复训练|断点续训")

# a person's comparison of two ZeRO stages: ZeRO-2 (or 1) runs, ZeRO-3 fails ("使用Zero2可以正常训练，但是使用Zero3报错",
# "deepspeed为zero2时候不报错，改成zero3就报错", "works with zero2, fails with zero3"): both stages on one line, the lower
# one next to a word of success
_ZERO_LOW = rf"(?i:{_L}(?:zero[-_ ]?(?:stage[-_ ]?)?|ds_z)[12](?![0-9]))"
# (English words whole: "zero2 fine-tuning" is no success)
_WORKED = (r"(?i:(?:\bworks?|\bworked|\bworking|\bruns? (?:fine|well|ok)|(?:is |was )?\bfine|\bok|\bno (?:problem|issue|error)s?|"
           r"\bwithout (?:any )?(?:problem|issue|error)s?|\bsucce\w*)(?![\w-])|正常|可以|不报错|没问题|没有问题|成功|能跑|跑通)")
_ZERO3_ONLY = lazyre.compile(rf"{_ZERO_LOW}[^。.;；\n]{{0,40}}?{_WORKED}|{_WORKED}[^。.;；\n]{{0,25}}?{_ZERO_LOW}")

# the datasets library mapping a function over the rows (arrow_dataset.py Dataset.map's progress bar: `desc` "Map",
# "Map (num_proc=N)" with a pool; the trainers' own descriptions of that map: trl "Tokenizing train dataset",
# "Applying chat template to train dataset", LLaMA-Factory "Running tokenizer on dataset", "Converting format of dataset")
_MAPPING = lazyre.compile(r"^\s*(?:Map(?: \(num_proc=\d+\))?|(?:Tokenizing|Applying chat template to|Extracting prompt in"
                          r"|Adding EOS to) (?:train|eval) dataset|Running tokenizer on dataset|Converting format of dataset"
                          r"(?: \(num_proc=\d+\))?):\s+\d+%")

# an adapter-only folder: PEFT's files (adapter_config.json, adapter_model.*) or unsloth's adapter-only save
# (save_method="lora"); vLLM's LoRA switch or request class shows LoRA in use, not that the model path is an adapter
_ADAPTER = lazyre.compile(r"adapter_config\.json|adapter_model\.(?:safetensors|bin)|save_method\s*=\s*['\"]lora['\"]")

_FROM_LINES = ("deepspeed", "zero3", "checkpoint-load", "zero3-only", "dataset-map", "lora-adapter")
FACTS = (*_FROM_LINES, "unsloth")


def _stage(value: Any) -> int | None:
    from ..checks.memory._facts import zero_stage
    from ..values import as_int
    if as_int(value) is not None:
        return as_int(value)
    return zero_stage(value)[0]


def run_facts(args: dict, lines: list, framework: str | None = None) -> dict[str, str]:
    """{fact: where it was read} for the facts of FACTS the run shows: "the run's arguments" or "line N (`text`)".
    ``lines`` are the kept log lines (LogLine), in order; ``framework`` the one the run was told to be (not assumed):
    unsloth patches the trainers it runs, so its run is a fact of its own."""
    out: dict[str, str] = {}
    if framework == "unsloth":
        out["unsloth"] = "what the inputs name (unsloth's import, banner or frames)"
    ds = args.get("deepspeed") or args.get("deepspeed_config_file")
    stage = _stage(args.get("zero_stage")) or _stage(ds)
    if ds or stage:
        out["deepspeed"] = "the run's arguments"
    if stage == 3:
        out["zero3"] = "the run's arguments"
    if args.get("resume_from_checkpoint") not in (None, "", "None", "none", False, "false", "False"):
        out["checkpoint-load"] = "the run's arguments"
    for line in lines:
        text = line.text
        if all(fact in out for fact in _FROM_LINES):
            break
        if "deepspeed" not in out and _DEEPSPEED.search(text) and not _INSTALLED.search(text):
            out["deepspeed"] = _at(line)
        if "zero3" not in out and ZERO3.search(text):
            out["zero3"] = _at(line)
            out.setdefault("deepspeed", _at(line))
        if "checkpoint-load" not in out and _LOADING.search(text):
            out["checkpoint-load"] = _at(line)
        if "zero3-only" not in out and ZERO3.search(text) and _ZERO3_ONLY.search(text):
            out["zero3-only"] = _at(line)
        if "dataset-map" not in out and _MAPPING.match(text):
            out["dataset-map"] = _at(line)
        if "lora-adapter" not in out and _ADAPTER.search(text):
            out["lora-adapter"] = _at(line)
    return out


def _at(line) -> str:
    text = " ".join(line.text.split())
    return f"line {line.where.line} (`{text[:100]}`)"
