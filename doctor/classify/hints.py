"""What the failure itself says about its fix, for the structural findings (GD990-GD997) and GD999.

An experienced engineer reads three things before anything else, and each is read here from the evidence only:
- the exception's own advice: ``Did you mean ...``, ``please set/use ...``, ``requires X>=Y``, ``pip install ...``
  (libraries write these on purpose: vLLM's config checks, transformers' ``requires_backends``, argparse);
- the flag the message names: a word or phrase of the message that is a field of the trainer's arguments
  (``sequence parallel`` -> ``--sequence_parallel_size``), or a value the user passed (``KeyError: 'grpo'``
  with ``--loss_type grpo`` in the command);
- a negative budget in a ``must be at least``/``got -N`` message: a value computed by subtraction
  (vLLM ``SamplingParams._verify_args`` ``max_tokens must be at least 1, got {max_tokens}``, vLLM 0.6-0.13,
  which ms-swift's infer engine computes as max_model_len minus the prompt's length).
Pure: strings in, strings out.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .. import lazyre

_HINT = lazyre.compile(
    r"(?i)((?:did you mean|perhaps you meant)\b[^\n]{1,160}?(?:[?!]|\.(?=\s|$)|$)"
    r"|(?<![\w-])please (?:set|use|install|upgrade|downgrade|pass|specify|make sure|check|add|remove|reduce|increase"
    r"|decrease|try|consider|refer|update|provide|ensure)\b[^\n]{1,200}?(?:[.!](?=\s|$)|$)"
    r"|\byou (?:can|should|may|need to|must) (?:set|use|install|upgrade|pass|specify|try|increase|decrease|reduce"
    r"|disable|enable|add|remove)\b[^\n]{1,200}?(?:[.!](?=\s|$)|$)"
    r"|\b(?:requires?|needs?) [\w.-]+\s*(?:>=|==|<=|>|<)\s*[\w.]+[^\n]{0,80}?(?:[.!](?=\s|$)|$)"
    r"|\bpip install [^\s,;`'\"]+(?: [^\s,;`'\"]+)?"
    r"|\b(?:try|consider) (?:setting|using|to set|to use|increasing|decreasing|reducing|lowering|raising|passing)"
    r"\b[^\n]{1,200}?(?:[.!](?=\s|$)|$)"
    # a purpose, then what to do ("To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    r"|(?<![\w-])to (?:allow|enable|disable|avoid|fix|override|resolve|suppress|silence|use|run|load|support)\b"
    r"[^.,\n]{1,80}, (?:please )?(?:set|use|pass|add|install|run|specify|increase|decrease|reduce)\b[^\n]{1,200}?"
    r"(?:[.!](?=\s|$)|$)"
    r"|(?<![\w-])make sure (?:that )?[^\n]{1,200}?(?:[.!](?=\s|$)|$))")
_WORD = lazyre.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
_QUOTED = lazyre.compile(r"""['"`]([^'"`\s]{1,80})['"`]""")
_NEG = lazyre.compile(r"\b([a-z_]+)\b[^.]{0,40}?\bmust be (?:at least|>=|greater than|positive|non-negative)[^.]{0,30}?"
                  r"\bgot (-\d+)", re.I)


# where the library's sentence ends and a person's prose glued to it begins: a CJK or full-width character (a paste's
# own question, "...try again.啥原因？"), or a question after a finished sentence ("... again. Why is that?")
_PROSE = lazyre.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]|(?<=[.!])\s+[^.!?]*\?\s*$")
# a hint that names nothing to change ("Please check the target modules and try again."): no identifier, flag,
# value or version in it
_CONCRETE = lazyre.compile(r"\w_\w|--\w|\d|['\"`=]|[a-z][A-Z]|\(\)")
_VAGUE = lazyre.compile(r"(?i)^please (?:check|make sure|ensure|try|refer)\b|^(?:you should|you can) (?:try|check)\b|"
                        r"^make sure\b")


def message_hints(message: str, limit: int = 2, exc_type: str = "") -> list[str]:
    """The sentences of an exception message that say what to do. Not Python's ``Did you mean`` of an
    AttributeError or NameError (a fuzzy match of the name against those that exist, not a fix: the code reads an
    attribute of another release), nor a vague request that names nothing; a hint ends where prose glued to the
    message begins."""
    out: list[str] = []
    short = exc_type.rsplit(".", 1)[-1]
    for m in _HINT.finditer(message):
        s = m.group(1).strip()
        p = _PROSE.search(s)
        if p is not None:
            s = s[:p.start()].strip()
        s = s.rstrip(",;")
        low = s.lower()
        if short in ("AttributeError", "NameError") and low.startswith(("did you mean", "perhaps you meant")):
            continue
        if _VAGUE.match(s) and not _CONCRETE.search(s):
            continue
        if len(s) > 12 and s not in out:
            out.append(s[:240])
        if len(out) >= limit:
            break
    return out


def _fields() -> frozenset[str]:
    from ..checks.args._swift_fields import RLHF_FIELDS_4_6
    return RLHF_FIELDS_4_6 | _TRL_FIELDS


# GRPOConfig fields of trl 0.14-0.29 that a message names (trl/trainer/grpo_config.py), beyond TrainingArguments'
_TRL_FIELDS = frozenset("""num_generations max_prompt_length max_completion_length use_vllm vllm_mode
vllm_server_host vllm_server_port vllm_gpu_memory_utilization vllm_tensor_parallel_size generation_batch_size
steps_per_generation beta epsilon epsilon_high loss_type scale_rewards reward_weights temperature top_p top_k min_p
repetition_penalty mask_truncated_completions num_iterations vllm_enable_sleep_mode vllm_importance_sampling_correction
use_liger_loss log_completions ds3_gather_for_generation gradient_checkpointing per_device_train_batch_size
per_device_eval_batch_size gradient_accumulation_steps eval_strategy padding_free sequence_parallel_size""".split())


def flags_named(message: str, cli: dict | None = None) -> list[str]:
    """Flags (argument fields) a message names by their name, by a phrase of their words, or by a value the user
    passed: ``--sequence_parallel_size`` for "RLHF do not support sequence parallel"."""
    fields = _fields() | set(cli or ())
    words = [w.lower() for w in _WORD.findall(message)]
    out: list[str] = []
    for w in words:
        if "_" in w and w in fields and w not in out:
            out.append(w)
    for n in (3, 2):
        for i in range(len(words) - n + 1):
            phrase = "_".join(words[i:i + n])
            hits = sorted(f for f in fields if f == phrase or f.startswith(phrase + "_"))
            if hits and len(hits) <= 2 and not any(h in out for h in hits):
                out.extend(h for h in hits if h not in out)
    if cli:
        quoted = set(_QUOTED.findall(message))
        for k, v in cli.items():
            if isinstance(v, str) and v in quoted and k not in out:
                out.append(k)
    return out[:3]


def negative_budget(message: str) -> str:
    """'' or the sentence that explains a negative value computed by subtraction."""
    m = _NEG.search(message)
    if m is None:
        return ""
    name, got = m.group(1), m.group(2)
    if name.lower() in ("max_tokens", "max_new_tokens"):
        return (f" {name} = {got} is a computed budget: the engine sets max_tokens to the context length "
                f"(max_model_len) minus the prompt's length, so a prompt (text plus image or video tokens) was "
                f"{got[1:]} token(s) longer than the context left room for.")
    return f" {name} = {got}: a value computed by subtraction went below zero; the inputs of that difference are the cause."


_LAYOUT = lazyre.compile(r"world_size \((\d+)\) is not equal to tensor_model_parallel_size \((\d+)\) x "
                     r"pipeline_model_parallel_size \((\d+)\)")


def layout_divides(message: str) -> str:
    """'' or, for vLLM's ``world_size (W) is not equal to tensor_model_parallel_size (T) x
    pipeline_model_parallel_size (P)`` (vllm/distributed/parallel_state.py initialize_model_parallel, 0.6-0.7) when
    W is a multiple of T x P, what the numbers rule out: the sizes fit the launch, so vLLM saw the whole launch world
    instead of an engine group of its own (the trainer/vLLM pair does not build per-engine groups)."""
    m = _LAYOUT.search(message)
    if not m:
        return ""
    w, t, p = (int(x) for x in m.groups())
    if t * p == 0 or w % (t * p) or w == t * p:
        return ""
    return (f"world_size {w} is a multiple of {t} x {p} = {t * p} (computed from the message): the sizes fit the "
            f"launch, so the engine was built over the whole world of {w} processes instead of a group of {t * p} "
            f"of its own: the installed trainer/vLLM pair does not build per-engine groups.")


# messages that name a word which is not an argument the user gave: an attribute the code read (an AttributeError's
# "object has no attribute 'x'"), a parameter the caller left out ("missing 2 required positional arguments: 'x'")
NOT_GIVEN = lazyre.compile(r"has no attribute|missing \d+ required (?:positional|keyword-only) arguments?")


def given_in(flag: str, message: str, given: Iterable[str] = ()) -> bool:
    """Whether ``flag`` is an argument the user passed (``given``: the command's and config's keys) or one the message
    says was given: ``--flag``, ``flag=value``, ``flag (value)``, ``keyword argument 'flag'``."""
    if flag in set(given):
        return True
    f = re.escape(flag)
    return re.search(rf"--{f}\b|\b{f}\s*[=:]\s*\S|\b{f}\s*\(\S|keyword argument '{f}'|value for '?{f}\b", message,
                     re.I) is not None


def flag_fix(flags: Iterable[str], framework: str | None, config_class: str | None = None) -> str:
    """``config_class``: the trainer's configuration class (GRPOConfig for a GRPO trainer, PPOConfig...); a trl run
    whose trainer is not told gets "the training arguments"."""
    flags = list(flags)
    if not flags:
        return ""
    if framework in ("trl", "unsloth", "verifiers"):
        names = ", ".join(f"`{f}`" for f in flags)
        where = f"that {config_class} field" if config_class else "that field of the training arguments"
        return f"The message names {names}: change {where} (or drop it) and rerun."
    names = ", ".join(f"--{f}" for f in flags)
    return f"The message names {names}: change or drop that flag in the command and rerun."


# classes a GRPO stack's message names, and the package that defines them (their source files)
_OWNERS = {
    "trl": ("GRPOConfig", "GRPOTrainer", "SFTConfig", "DPOConfig", "ScriptArguments", "ModelConfig", "VLLMClient"),
    "transformers": ("TrainingArguments", "Trainer", "PreTrainedModel", "PretrainedConfig", "PreTrainedTokenizer",
                     "PreTrainedTokenizerFast", "ProcessorMixin", "GenerationConfig", "BatchEncoding"),
    "vLLM": ("LLM", "LLMEngine", "SamplingParams", "EngineArgs", "AsyncLLMEngine", "ModelConfig", "VllmConfig"),
    "peft": ("LoraConfig", "PeftModel", "PeftModelForCausalLM", "PeftConfig"),
    "ms-swift": ("RLHFArguments", "TrainArguments", "GRPOArguments", "SwiftMixin"),
    "accelerate": ("Accelerator", "AcceleratorState", "PartialState"),
}
_ATTR = lazyre.compile(r"^'(\w+)' object has no attribute '(\w+)'|^module '([\w.]+)' has no attribute '(\w+)'|"
                   r"^type object '(\w+)' has no attribute '(\w+)'")


def attribute_owner(message: str) -> tuple[str, str, str] | None:
    """(package, class or module, attribute) of an AttributeError on a class or module a known package defines."""
    m = _ATTR.match(message.strip())
    if m is None:
        return None
    cls, attr = (m.group(1), m.group(2)) if m.group(1) else ((m.group(5), m.group(6)) if m.group(5) else (None, None))
    if cls is None:
        mod, attr = m.group(3), m.group(4)
        top = mod.split(".", 1)[0]
        pkg = {"swift": "ms-swift", "vllm": "vLLM"}.get(top, top)
        return pkg, mod, attr
    for pkg, names in _OWNERS.items():
        if cls in names:
            return pkg, cls, attr or ""
    return None


def owner_text(owner: tuple[str, str, str], framework: str | None) -> tuple[str, str]:
    """(explanation, fix) for an attribute missing on a package's class or module."""
    pkg, cls, attr = owner
    why = (f" {cls} is {pkg}'s; the installed {pkg} has no `{attr}` on it, so the code that reads it (the caller "
           f"in the stack, or the project around the trainer) was written for another {pkg} release: the field or "
           f"name was added, renamed or removed between releases.")
    fix = (f"Install the {pkg} version the calling code pins (its requirements.txt / setup.py / README), or the "
           f"{pkg} release that has `{cls}.{attr}` (see {pkg}'s changelog); `pip show {pkg.lower()}` shows the one "
           f"installed now.")
    return why, fix


_ARGS_ATTR = lazyre.compile(r"\bargs\.([a-z_][a-z0-9_]*)\b")
_ENTRY = lazyre.compile(r"swift[/\\](?:cli|llm[/\\]train)[/\\](\w+)\.py")


def flag_from_code(frames) -> tuple[str, str] | None:
    """(flag, code) of the innermost frame whose printed source line reads ``args.<flag>``."""
    for f in reversed(frames):
        m = _ARGS_ATTR.search(f.code or "")
        if m:
            return m.group(1), f.code.strip()
    return None


def entry_point(frames) -> str | None:
    """The ms-swift command that ran (``sft`` for swift/cli/sft.py), from the outermost frames."""
    for f in frames:
        m = _ENTRY.search(f.path)
        if m:
            return m.group(1)
    return None


# the phase of a run a frame's function names (transformers Trainer, trl GRPOTrainer, ms-swift trainers), innermost
# first: the first frame (from the raise site outwards) that names one decides
_PHASES = (
    (("_maybe_log_save_evaluate",), None),  # a dispatcher: the frame inside it decides
    ((" log", " _log_completions", " log_metrics"), "logging the step's metrics"),
    ((" evaluate", " evaluation_loop", " prediction_step", " _evaluate"), "evaluation"),
    ((" _save_checkpoint", " save_model", " _save", " save_pretrained"), "checkpoint save"),
    ((" _move_model_to_vllm", " _sync_weights", " update_named_param", " update_flattened_params",
      " _load_state_dict_to_vllm"), "weight sync to the rollout engine"),
    ((" _calculate_rewards", " _compute_rewards", " _score_completions", " compute_rewards"), "reward computation"),
    ((" _generate", " generate", " infer", " _infer", " infer_task", " _fast_infer"), "rollout generation"),
    ((" training_step", " compute_loss", " _compute_loss"), "the training step"),
    ((" _prepare_inputs", " _generate_and_score_completions"), "batch preparation"),
    ((" from_pretrained", " get_model_tokenizer", " load_model"), "model loading"),
    ((" parse_args", " __post_init__", " _parse_args"), "argument parsing"),
)


# transformers' CallbackHandler.call_event runs each TrainerCallback's event method (trainer_callback.py:
# `result = getattr(callback, event)(...)`, 4.x-5.x): what a callback calls (its own generate, evaluate, logging) is
# the callback's work, not the trainer phase of the same name
_CALL_EVENT = "trainer_callback.py"


def phase_of(frames) -> str | None:
    """The phase the innermost frames name, or None; inside a TrainerCallback event, "a trainer callback"."""
    hook = next((i for i in range(len(frames) - 1, -1, -1) if frames[i].path.replace("\\", "/").endswith(_CALL_EVENT)
                 and (frames[i].func == "call_event" or frames[i].func.startswith("on_"))), None)
    if hook is not None:  # the event: CallbackHandler's on_<event>, or the method right inside call_event
        fr = frames[hook]
        event = fr.func if fr.func != "call_event" else (frames[hook + 1].func if hook + 1 < len(frames) else "")
        return "a trainer callback" + (f" ({event})" if event else "")
    for f in reversed(frames):
        hay = f" {f.func}"
        for names, phase in _PHASES:
            if any(hay == n or hay.startswith(n + " ") for n in names):
                if phase is None:
                    break
                return phase
    return None


# vLLM v1 worker/gpu_worker.py (0.11+) after its memory profile: "... Replace gpu_memory_utilization config with
# `--kv-cache-memory=A` to fit into requested memory, or `--kv-cache-memory=B` to fully utilize gpu memory. Current
# kv cache memory in use is C bytes."
_KV = lazyre.compile(r"--kv-cache-memory=(\d+)`? to fit into requested memory.*?--kv-cache-memory=(\d+)`? to fully "
                 r"utili[sz]e gpu memory\. Current kv cache memory in use is (\d+) bytes")
_UTIL = lazyre.compile(r"Desired GPU memory utilization is \(([\d.]+),")


def vllm_memory_note(context: str) -> tuple[str, str] | None:
    """(explanation, fix) from vLLM's own memory accounting line when it says the KV cache is larger than what fits."""
    m = _KV.search(context)
    if m is None:
        return None
    fit, full, cur = (int(g) for g in m.groups())
    if cur <= fit:
        return None
    gib = 1 << 30
    u = _UTIL.search(context)
    util = float(u.group(1)) if u else None
    why = (f"vLLM's own memory accounting (gpu_worker.py) printed before the failure says the KV cache in use "
           f"({cur / gib:.2f} GiB) is larger than what fits the requested memory after weights, activations and CUDA "
           f"graphs ({fit / gib:.2f} GiB; {full / gib:.2f} GiB would use the whole GPU): the KV cache was sized "
           f"without the headroom the first sampler or training step needs.")
    new = f"{util * fit / cur:.2f}" if util else "a lower value"
    fix = (f"Give vLLM less: gpu_memory_utilization {new} (now {util:.2f}: scaled by {fit / gib:.2f}/{cur / gib:.2f} "
           f"GiB) or a fixed KV cache of at most {fit} bytes (vLLM's kv_cache_memory / --kv-cache-memory={fit}); "
           f"shorter max sequence length and fewer sequences also shrink it." if util else
           f"Cap the KV cache at {fit} bytes (--kv-cache-memory={fit}) or lower gpu_memory_utilization.")
    return why, fix


# CPython's own wordings (Objects/unicodeobject.c PyUnicode_Concat, Objects/abstract.c, Python/ceval.c): which type
# arrived where another was expected, read as a sample-shape fact
_SHAPES = (
    (lazyre.compile(r'can only concatenate str \(not "(list|dict)"\) to str'),
     "a {0} arrived where code builds a string: a message's content is a list of typed parts ({{'type': 'image'}}, "
     "{{'type': 'text', 'text': ...}}) where this code (a template, a processor or the trainer of this version) "
     "expects plain text; the dataset format and the installed versions disagree"),
    (lazyre.compile(r"string indices must be integers"),
     "a string arrived where a dict or list was expected: a prompt already rendered to text (chat template applied "
     "in advance) where the trainer expects a list of {{'role', 'content'}} messages, or a column holding text where a "
     "structure is expected; in GRPO, also a reward function reading completion[0]['content'] from completions that "
     "are plain strings (trl's GRPOTrainer passes message lists only for conversational prompts)"),
    (lazyre.compile(r"'(str)' object has no attribute '(?:get|keys|items)'"),
     "a string arrived where a dict was expected (a rendered prompt or a text column where messages are expected)"),
    (lazyre.compile(r"'(list)' object has no attribute '(?:get|keys|items)'"),
     "a list arrived where a dict was expected (a batch of samples where one sample is expected: the code path "
     "received the trainer's list-of-dicts batch)"),
)


def sample_shape(message: str) -> str:
    for rx, text in _SHAPES:
        m = rx.search(message)
        if m:
            return text.format(*(m.groups() or ("value",)))[:1].upper() + text.format(*(m.groups() or ("value",)))[1:] + "."
    return ""
