"""The framework-aware vocabulary: a fix written in ms-swift's terms, said in the terms of the framework that ran.

Rules write their fixes once, mostly in ms-swift's flags (the tool's first audience). For a run detected as trl or a
framework built on it (open-r1, Video-R1 and other recipes, unsloth, verifiers: ``framework.detect``), each fix line
and message goes through ``say``: an ms-swift-only flag or environment variable becomes the framework's own term, and
a line whose lever has no equivalent there is dropped (an ms-swift flag a trl user cannot set does not help).
A line that already names both frameworks ("ms-swift --vllm_max_model_len, trl vllm-serve --max_model_len") is kept
as written, except a line that starts with "ms-swift:" (that framework's own step), which is dropped.

The equivalents, from the sources (field names as in each release's dataclass):
- trl ``trl/trainer/grpo_config.py`` (0.18-0.24): ``vllm_mode`` ("server" | "colocate"), ``vllm_server_host``,
  ``vllm_server_port``, ``vllm_gpu_memory_utilization``, ``vllm_tensor_parallel_size``, ``vllm_max_model_length``
  (colocate; ``vllm_max_model_len`` in the releases before), ``vllm_enable_sleep_mode``; ``max_prompt_length``; ``ddp_timeout`` (transformers TrainingArguments).
- ``trl vllm-serve`` (``trl/scripts/vllm_serve.py`` ScriptArguments, 0.17+): ``--tensor_parallel_size``,
  ``--data_parallel_size`` (0.18+), ``--gpu_memory_utilization``, ``--max_model_len``, ``--enforce_eager``; its GPUs are
  the ``CUDA_VISIBLE_DEVICES`` of the server command.
- accelerate ``accelerate launch --num_processes / --num_machines / --machine_rank`` and torchrun
  ``--nproc_per_node / --nnodes / --node_rank`` replace ms-swift's NPROC_PER_NODE / NNODES / NODE_RANK
  (``swift/cli/main.py`` turns those into torchrun arguments).
- unsloth ``FastLanguageModel.from_pretrained(gpu_memory_utilization=, max_seq_length=)`` sizes its vLLM engine
  (``unsloth/models/llama.py``, fast_inference=True), in place of the GRPOConfig vLLM fields.
- verl: Hydra overrides of ``verl/trainer/config/ppo_trainer.yaml`` (verl 0.3-0.4): ``actor_rollout_ref.rollout.*``
  (gpu_memory_utilization, tensor_model_parallel_size, max_model_len, enforce_eager, free_cache_engine, n,
  temperature, top_p, top_k), ``actor_rollout_ref.actor.*`` (ppo_micro_batch_size_per_gpu, kl_loss_coef, grad_clip,
  optim.lr, fsdp_config.param_offload / optimizer_offload), ``data.max_prompt_length`` / ``max_response_length``,
  ``trainer.*`` (n_gpus_per_node, nnodes, save_freq, total_epochs, max_actor_ckpt_to_keep).

OpenRLHF's own flags come from ``_OPENRLHF`` (openrlhf/cli/train_ppo_ray.py); a run on vLLM alone gets ``vllm serve``'s
options. A framework the log does not tell (or one with no table here: LLaMA-Factory, axolotl, a DeepSpeed or
torch.distributed job) gets each lever by its neutral name (``num_generations 4``, ``vLLM's gpu_memory_utilization
0.5``): never an ms-swift flag, and a line that rests on an ms-swift-only lever is left out.
"""
from __future__ import annotations

import re

from .. import lazyre
from ..model import Finding

# frameworks whose user sets GRPOConfig fields (trl itself and what is built on it)
TRL_LIKE = frozenset({"trl", "unsloth", "verifiers"})
# ms-swift flag (or environment variable) -> verl's Hydra override; a flag not here has no verl counterpart
_VERL: dict[str, str] = {
    "--vllm_gpu_memory_utilization": "actor_rollout_ref.rollout.gpu_memory_utilization={v}",
    "--vllm_tensor_parallel_size": "actor_rollout_ref.rollout.tensor_model_parallel_size={v}",
    "--tensor_parallel_size": "actor_rollout_ref.rollout.tensor_model_parallel_size={v}",
    "--vllm_max_model_len": "actor_rollout_ref.rollout.max_model_len={v}",
    "--vllm_enforce_eager": "actor_rollout_ref.rollout.enforce_eager={v}",
    "--sleep_level": "actor_rollout_ref.rollout.free_cache_engine=True",
    "--num_generations": "actor_rollout_ref.rollout.n={v}",
    "--temperature": "actor_rollout_ref.rollout.temperature={v}",
    "--top_p": "actor_rollout_ref.rollout.top_p={v}",
    "--top_k": "actor_rollout_ref.rollout.top_k={v}",
    "--max_completion_length": "data.max_response_length={v}",
    "--max_prompt_length": "data.max_prompt_length={v}",
    "--max_length": "data.max_prompt_length={v}",
    "--per_device_train_batch_size": "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={v}",
    "--learning_rate": "actor_rollout_ref.actor.optim.lr={v}",
    "--beta": "actor_rollout_ref.actor.kl_loss_coef={v}",
    "--max_grad_norm": "actor_rollout_ref.actor.grad_clip={v}",
    "--gradient_checkpointing": "actor_rollout_ref.model.enable_gradient_checkpointing={v}",
    # seconds, default 600; in verl's later configs (MegatronCriticConfig.nccl_timeout in its source), not in 0.3's
    "--ddp_timeout": "actor_rollout_ref.nccl_timeout={v}",
    "--offload_model": "actor_rollout_ref.actor.fsdp_config.param_offload={v}",
    "--offload_optimizer": "actor_rollout_ref.actor.fsdp_config.optimizer_offload={v}",
    "--save_steps": "trainer.save_freq={v}",
    "--save_total_limit": "trainer.max_actor_ckpt_to_keep={v}",
    "--num_train_epochs": "trainer.total_epochs={v}",
    "NPROC_PER_NODE": "trainer.n_gpus_per_node={v}",
    "NNODES": "trainer.nnodes={v}",
}

# ms-swift flag -> EasyR1's override of examples/config.yaml (hiyouga/EasyR1 at 0243608d: data.*, algorithm.kl_coef,
# worker.actor.* with its offload.* and model.*, worker.rollout.*, trainer.*); a flag not here has no EasyR1 counterpart
_EASYR1: dict[str, str] = {
    "--vllm_gpu_memory_utilization": "worker.rollout.gpu_memory_utilization={v}",
    "--vllm_tensor_parallel_size": "worker.rollout.tensor_parallel_size={v}",
    "--tensor_parallel_size": "worker.rollout.tensor_parallel_size={v}",
    "--vllm_enforce_eager": "worker.rollout.enforce_eager={v}",
    "--num_generations": "worker.rollout.n={v}",
    "--temperature": "worker.rollout.temperature={v}",
    "--top_p": "worker.rollout.top_p={v}",
    "--max_completion_length": "data.max_response_length={v}",
    "--max_prompt_length": "data.max_prompt_length={v}",
    "--max_length": "data.max_prompt_length={v}",
    "--per_device_train_batch_size": "worker.actor.micro_batch_size_per_device_for_update={v}",
    "--learning_rate": "worker.actor.optim.lr={v}",
    "--beta": "algorithm.kl_coef={v}",
    "--max_grad_norm": "worker.actor.max_grad_norm={v}",
    "--gradient_checkpointing": "worker.actor.model.enable_gradient_checkpointing={v}",
    "--offload_model": "worker.actor.offload.offload_params={v}",
    "--offload_optimizer": "worker.actor.offload.offload_optimizer={v}",
    "--save_steps": "trainer.save_freq={v}",
    "--save_total_limit": "trainer.save_limit={v}",
    "--num_train_epochs": "trainer.total_episodes={v}",
    "NPROC_PER_NODE": "trainer.n_gpus_per_node={v}",
    "NNODES": "trainer.nnodes={v}",
}

# ms-swift flag -> OpenRLHF's flag of the same setting (openrlhf/cli/train_ppo_ray.py argparse at 021d1b0:
# --n_samples_per_prompt, --micro_train_batch_size "batch size per GPU", --vllm_gpu_memory_utilization,
# --vllm_tensor_parallel_size, --generate_max_len, --prompt_max_len, --actor_learning_rate, --init_kl_coef, --max_norm,
# --temperature, --top_p, --save_steps, --actor_num_gpus_per_node, --actor_num_nodes); read back by ``read_as``
_OPENRLHF: dict[str, str] = {
    "--num_generations": "--n_samples_per_prompt {v}",
    "--per_device_train_batch_size": "--micro_train_batch_size {v}",
    "--vllm_gpu_memory_utilization": "--vllm_gpu_memory_utilization {v}",
    "--vllm_tensor_parallel_size": "--vllm_tensor_parallel_size {v}",
    "--max_completion_length": "--generate_max_len {v}",
    "--max_prompt_length": "--prompt_max_len {v}",
    "--learning_rate": "--actor_learning_rate {v}",
    "--beta": "--init_kl_coef {v}",
    "--max_grad_norm": "--max_norm {v}",
    "--temperature": "--temperature {v}",
    "--top_p": "--top_p {v}",
    "--save_steps": "--save_steps {v}",
    "NPROC_PER_NODE": "--actor_num_gpus_per_node {v}",
    "NNODES": "--actor_num_nodes {v}",
    # a switch of the same name (store_true there)
    "--gradient_checkpointing": "--gradient_checkpointing",
}


# the frameworks whose settings are Hydra/OmegaConf overrides or flags of their own, each with its table
_TABLES = {"verl": _VERL, "easyr1": _EASYR1, "openrlhf": _OPENRLHF}


def read_as(framework: str) -> dict[str, str]:
    """The framework's own setting name -> the name the rules read (ms-swift's flag, without dashes), from the
    equivalence tables above, read backwards: ``actor_rollout_ref.rollout.n`` -> ``num_generations`` (verl),
    ``n_samples_per_prompt`` -> ``num_generations`` (OpenRLHF). Only settings that carry the value; the first
    ms-swift name of a setting wins (``vllm_tensor_parallel_size`` before ``tensor_parallel_size``)."""
    table = _TABLES.get(framework, {})
    out: dict[str, str] = {}
    for swift, term in table.items():
        if "{v}" not in term or not swift.startswith("--"):
            continue  # a constant (free_cache_engine=True) or a process count: the layout readers take those
        own = term.split("=", 1)[0] if "=" in term else term.split()[0]
        out.setdefault(own.lstrip("-"), swift[2:])
    return out


_NONE = None  # a lever without an equivalent: the line is dropped
# ms-swift-only flag -> (trl term, unsloth term: "" for the trl one, None for none); ``{v}``: the flag's value
_FLAGS: dict[str, tuple[str | None, str | None]] = {
    "--vllm_gpu_memory_utilization": ("GRPOConfig(vllm_gpu_memory_utilization={v}) (colocate; server: "
                                      "trl vllm-serve --gpu_memory_utilization {v})",
                                      "FastLanguageModel.from_pretrained(gpu_memory_utilization={v})"),
    "--vllm_max_model_len": ("GRPOConfig(vllm_max_model_length={v}) (vllm_max_model_len in older trl; colocate; "
                             "server: trl vllm-serve --max_model_len {v})",
                             "FastLanguageModel.from_pretrained(max_seq_length={v})"),
    "--vllm_tensor_parallel_size": ("GRPOConfig(vllm_tensor_parallel_size={v}) (colocate; server: trl vllm-serve "
                                    "--tensor_parallel_size {v})", ""),
    "--vllm_enforce_eager": ("trl vllm-serve --enforce_eager {v}", ""),
    "--vllm_mode": ("GRPOConfig(vllm_mode=\"{v}\")", _NONE),
    "--vllm_server_host": ("GRPOConfig(vllm_server_host={v})", _NONE),
    "--vllm_server_port": ("GRPOConfig(vllm_server_port={v})", _NONE),
    "--use_vllm": ("GRPOConfig(use_vllm={v})", ""),
    "--sleep_level": ("GRPOConfig(vllm_enable_sleep_mode=True)", _NONE),
    "--max_length": ("GRPOConfig(max_prompt_length={v})", ""),
    "--ddp_timeout": ("GRPOConfig(ddp_timeout={v})", ""),
    # trl has no such flag: LoRA is a peft_config given to GRPOTrainer, a full run passes none (_tuner_term)
    "--tuner_type": ("{tuner}", ""),
    "--train_type": ("{tuner}", ""),
    "--deepspeed": ("a DeepSpeed {v} config (accelerate launch --config_file <deepspeed_{v}.yaml>)", _NONE),
    # ms-swift levers with no trl counterpart
    "--offload_model": (_NONE, ""), "--offload_optimizer": (_NONE, ""), "--move_model_batches": (_NONE, ""),
    "--dynamic_sample": (_NONE, ""), "--max_resample_times": (_NONE, ""), "--async_generate": (_NONE, ""),
    "--external_plugins": (_NONE, ""), "--model_type": (_NONE, ""), "--template": (_NONE, ""),
    "--vllm_enable_lora": (_NONE, ""), "--truncation_strategy": (_NONE, ""), "--rlhf_type": (_NONE, ""),
    "--multi_turn_scheduler": (_NONE, ""), "--vllm_limit_mm_per_prompt": (_NONE, ""),
    "--enable_flattened_weight_sync": (_NONE, ""), "--padding_free": (_NONE, ""),
    # ms-swift's soft_overlong reward settings (swift/plugin/orm.py SoftOverlong): no trl or neutral counterpart
    "--soft_cache_length": (_NONE, ""), "--soft_max_length": (_NONE, ""),
    # transformers' from_pretrained(attn_implementation=..., torch_dtype=...), which trl passes through
    # GRPOConfig.model_init_kwargs
    "--attn_impl": ("GRPOConfig(model_init_kwargs={\"attn_implementation\": \"{v}\"})", _NONE),
    "--torch_dtype": ("GRPOConfig(model_init_kwargs={\"torch_dtype\": \"{v}\"}) with bf16=True", ""),
    # trl takes the reward functions as GRPOTrainer(reward_funcs=[...]) and their weights in GRPOConfig
    "--reward_funcs": ("GRPOTrainer(reward_funcs=[...])", ""),
    "--reward_weights": ("GRPOConfig(reward_weights=[...])", ""),
    "--target_modules": ("peft LoraConfig(target_modules={v})", ""),
}
# GRPOConfig / TrainingArguments fields that ms-swift spells as flags of the same name: GRPOConfig(name=value)
GRPO_FIELDS = frozenset({
    "num_generations", "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "max_completion_length", "max_prompt_length", "temperature", "top_p", "top_k", "learning_rate", "beta",
    "epsilon", "log_completions", "gradient_checkpointing", "num_train_epochs", "max_steps", "save_steps",
    "eval_steps", "logging_steps", "bf16", "fp16", "max_grad_norm", "seed", "steps_per_generation",
    "generation_batch_size", "scale_rewards", "loss_type", "num_iterations", "eval_strategy", "save_strategy",
    "warmup_ratio", "lr_scheduler_type", "ds3_gather_for_generation", "output_dir", "dataloader_drop_last",
    "repetition_penalty", "mask_truncated_completions", "torch_empty_cache_steps", "eval_on_start"})
_ENV: dict[str, str] = {
    "NPROC_PER_NODE": "the number of training processes (accelerate launch --num_processes {v}, torchrun "
                      "--nproc_per_node {v})",
    "NNODES": "the number of nodes (accelerate launch --num_machines {v}, torchrun --nnodes {v})",
    "NODE_RANK": "the node's rank (accelerate launch --machine_rank {v}, torchrun --node_rank {v})",
}
_SWIFT_CMD = lazyre.compile(r"`?\bswift (?:rollout|rlhf|sft|export|deploy|infer)\b[^`]*`?")
_FLAG = lazyre.compile(r"(?<![\w-])(--[a-z_]+)(?:[ =]((?:\"[^\"]*\"|'[^']*'|<[^>]*>|[\w.:/-]+)))?")
_ENVVAR = lazyre.compile(r"\b(NPROC_PER_NODE|NNODES|NODE_RANK)\b(?:=(\S+?)(?=[\s,;:)]|$))?")
# a line that gives both frameworks' terms already, or the trl side of a choice
# what a flag's value looks like (a sentence's next word does not): a number, a boolean, a placeholder, a quoted
# string, an identifier with a digit or an underscore (zero3, /path), or one of the enum words ms-swift's flags take
_VALUE = lazyre.compile(r"""^(?:[-\d.]+(?:e-?\d+)?|true|false|True|False|<[^>]*>|"[^"]*"|'[^']*'|\S*[\d_/]\S*|"""
                    r"server|colocate|lora|full|none|epoch|steps|no|auto|sdpa|eager|bfloat16|float16|float32)$")
_TWO = lazyre.compile(r"GRPOConfig\(([^()]*)\)\s+(?:with\s+|and\s+)?GRPOConfig\(([^()]*)\)")
_LAUNCHER = lazyre.compile(r"vllm-serve|accelerate launch|torchrun|vllm serve")
_BOTH = lazyre.compile(r"\btrl\b|GRPOConfig|vllm-serve|accelerate launch|torchrun|FastLanguageModel")


def _tuner_term(value: str | None) -> str:
    """ms-swift's --tuner_type in trl's terms: a LoRA run passes a peft LoraConfig to GRPOTrainer, a full run none."""
    v = (value or "").strip("\"'").lower()
    if v == "full":
        return "full-parameter training (no peft_config passed to GRPOTrainer)"
    if v in ("lora", "qlora", "dora"):
        return "a peft LoraConfig passed as GRPOTrainer(peft_config=...)"
    return "the choice between full-parameter training and a peft_config passed to GRPOTrainer"


def _unsloth(framework: str | None) -> bool:
    return framework == "unsloth"


# one alternative of a list that gives each framework's spelling ("(ms-swift --save_total_limit 2; transformers/trl
# save_total_limit=2)", "(trl: max_prompt_length; ...; ms-swift: --max_length)"): the ms-swift one, with its separator
_SWIFT_ALT = lazyre.compile(r"(?<=\()ms-swift(?::\s|\s)[^;()]*;\s*|(?<=\()ms-swift(?::\s|\s)[^,;()]*,\s*|"
                        r"[;,]\s*ms-swift(?::\s|\s)[^;,()]*(?=\))|"
                        # "max_prompt_length (trl) / max_length with truncation_strategy (ms-swift)", either order
                        r"\s*/\s*[^/;,():]*?\(ms-swift\)|(?<=: )[^/;,():]*?\(ms-swift\)\s*/\s*")


def without_swift_alternative(line: str) -> str:
    """``line`` without the ms-swift entry of a list of per-framework spellings, for a run of another framework that
    the report names (a run whose framework is not told keeps every entry: the user picks theirs)."""
    return _SWIFT_ALT.sub("", line) if "ms-swift" in line else line


# how a fix labels one framework's spelling: "(verl actor_rollout_ref.actor...)", "(OpenRLHF: --adam_offload)"
_FW_LABELS: dict[str, tuple[str, ...]] = {
    "ms-swift": ("ms-swift",), "trl": ("trl",), "verl": ("verl",), "easyr1": ("EasyR1", "easyr1"), "openrlhf": ("OpenRLHF", "openrlhf"),
    "llamafactory": ("LLaMA-Factory", "LlamaFactory", "llamafactory"), "unsloth": ("unsloth", "Unsloth"),
    "axolotl": ("axolotl",)}
# a framework built on another reads that one's spellings too (ms-swift's and unsloth's trainers are trl's subclasses)
_BASE = {"ms-swift": {"trl"}, "unsloth": {"trl"}, "verifiers": {"trl"}}
_PAREN_ALT = lazyre.compile(r"\s*\(([^()]*)\)")


def _label_of(part: str) -> str | None:
    for fw, labels in _FW_LABELS.items():
        for label in labels:
            if part.startswith(label) and part[len(label):len(label) + 1] in (":", " ") and \
                    not _CITATION.match(part[len(label):]):
                return fw
    return None


# "(ms-swift FAQ: ...)", "(verl docs)": a source cited, not a spelling to use
_CITATION = lazyre.compile(r"^:?\s*(?:FAQ|docs?|documentation|best practice|README|issue|source)\b", re.I)


# a runtime's or library's label in a list of spellings ("vLLM --dtype half", "peft >= 0.8", "transformers
# attn_implementation=...): kept for a run whose trainer is not told
_RUNTIME_LABELS = ("vLLM", "vllm", "transformers", "peft", "torch", "PyTorch", "DeepSpeed", "deepspeed", "accelerate")
# a piece that spells a setting (a flag, a key=value, a "label:" step, a code span, a snake_case key), not prose about
# a release ("ms-swift 3.x changed this")
_SPELLING = lazyre.compile(r"--\w|\w=|^[^\s:]+:\s|`|\b[a-z]+_[a-z_]+\b")


# a statement about a framework's releases ("trl >= 0.17 also counts gradient_accumulation_steps"), not its spelling
_RELEASES = lazyre.compile(r"^\S+\s*(?:>=|<=|==|<|>|\d)")


def _runtime_label(part: str) -> bool:
    return any(part.startswith(label) and part[len(label):len(label) + 1] in (":", " ") for label in _RUNTIME_LABELS)


def _neutral_alternatives(line: str) -> str:
    """For a run whose trainer framework is not told (or a runtime alone: vLLM, torch, DeepSpeed): a parenthesis's
    spellings labelled with a trainer framework ("ms-swift --torch_dtype float16", "trl fp16=True", "LLaMA-Factory
    lora_target all") left out, the runtime's and the unlabelled ones kept (issue 29: never another framework's flags
    by default)."""
    def paren(m: re.Match) -> str:
        kept: list[str] = []
        dropped = False
        for part in (p.strip() for p in m.group(1).split(";")):
            pieces = [x.strip() for x in part.split(", ")]
            if len(pieces) > 1 and not all(_label_of(x) or _runtime_label(x) for x in pieces):
                pieces = [part]   # commas inside one spelling, not a list of them
            keep = [x for x in pieces if not (_label_of(x) and _SPELLING.search(x) and not _RELEASES.match(x))]
            dropped = dropped or len(keep) < len(pieces)
            if keep:
                kept.append(", ".join(keep))
        if not dropped:
            return m.group(0)
        return f" ({'; '.join(kept)})" if kept else ""

    return _PAREN_ALT.sub(paren, line)


def only_own_alternatives(line: str, framework: str | None) -> str:
    """``line`` without the spellings a parenthesis gives for other trainer frameworks than the run's: "(verl X; OpenRLHF
    Y)" keeps the run's entry, and "(verl X)" alone goes from an OpenRLHF run's fix. A framework not told, or a runtime
    (torch, vLLM, DeepSpeed), keeps only the runtime's and the unlabelled spellings (``_neutral_alternatives``)."""
    if "(" not in line:
        return line
    if framework not in _FW_LABELS:
        return _neutral_alternatives(line)
    mine = {framework} | _BASE.get(framework, set())

    def paren(m: re.Match) -> str:
        parts = [p.strip() for p in m.group(1).split(";")]
        # a runtime's spelling ("DeepSpeed offload_optimizer") holds under every trainer framework
        labels = [_label_of(p) or ("runtime" if _runtime_label(p) else None) for p in parts]
        if not all(labels):
            return m.group(0)   # not a list of per-framework spellings
        keep = [p for p, fw in zip(parts, labels) if fw in mine or fw == "runtime"]
        if len(keep) == len(parts):
            return m.group(0)
        return f" ({'; '.join(keep)})" if keep else ""

    return _PAREN_ALT.sub(paren, line)


def say(line: str, framework: str | None) -> str | None:
    """``line`` in the terms of ``framework``; None when its lever does not exist there. Unchanged for ms-swift
    (but for other frameworks' spellings in parentheses); GRPOConfig fields for trl and what is built on it; verl's
    overrides and OpenRLHF's flags for those; neutral names (vLLM serve's options for a vLLM-only run) for a framework
    not told or without a table."""
    if framework == "ms-swift":
        return only_own_alternatives(line, framework)
    if framework is not None:
        line = only_own_alternatives(without_swift_alternative(line), framework)
    else:
        line = only_own_alternatives(line, None)
    if framework in _TABLES:
        return _say_table(line, _TABLES[framework])
    if framework == "vllm":
        line = _without_trainer_clauses(line)
        if not line:
            return None
    if framework == "llamafactory":
        return _say_neutral(_LF_DTYPE_FLAG.sub(_lf_dtype, line), _LLAMAFACTORY)
    if framework not in TRL_LIKE:
        return _say_neutral(line, _VLLM_SERVE if framework == "vllm" else None)
    if line.lstrip().lower().startswith("ms-swift:"):
        return None
    if _BOTH.search(line) and "ms-swift" in line:
        return line  # both terms given, side by side
    if _SWIFT_CMD.search(line):
        if "swift rollout" not in line or _unsloth(framework):
            return None
        line = _SWIFT_CMD.sub("`CUDA_VISIBLE_DEVICES=<free GPUs> trl vllm-serve --model <model>`", line)
    dropped = False
    launcher = bool(_LAUNCHER.search(line))  # its --flags are the server's or the launcher's options: kept

    def flag(m: re.Match) -> str:
        nonlocal dropped
        name = m.group(1)
        if _labelled(line, m) or _quoted(line, m):
            return m.group(0)  # "ms-swift --eval_strategy no": labelled as the other framework's spelling
        value, tail = _value_of(line, m)
        v = value if value is not None else "<value>"
        if v.lower() in ("true", "false"):
            v = v.capitalize()
        if name not in _FLAGS:
            if name[2:] in GRPO_FIELDS and not launcher:
                return (f"GRPOConfig({name[2:]}={v})" if value is not None else f"GRPOConfig.{name[2:]}") + tail
            return m.group(0)
        trl_term, uns = _FLAGS[name]
        term = (trl_term if uns == "" else uns) if _unsloth(framework) else trl_term
        if term is None:
            dropped = True
            return m.group(0)
        if term == "{tuner}":
            return _tuner_term(value) + tail
        return term.replace("{v}", v.strip("\"'")) + tail

    out = _FLAG.sub(flag, line)
    if dropped:
        return None

    def env(m: re.Match) -> str:
        v = m.group(2) or "N"
        return _ENV[m.group(1)].replace("{v}", v)

    out = _ENVVAR.sub(env, out)
    while True:  # GRPOConfig(a=1) GRPOConfig(b=2) -> GRPOConfig(a=1, b=2)
        merged = _TWO.sub(r"GRPOConfig(\1, \2)", out)
        if merged == out:
            return out
        out = merged


_TRAINER_CLAUSE = lazyre.compile(r"\btrainer(?:'s)? (?:release|version)s?\b|\bms-swift's README\b|\btrl's vllm extra\b")


def _without_trainer_clauses(line: str) -> str:
    """A line for a run of vLLM alone (serving, no trainer): its clauses about a trainer's release left out, since none
    ran. Clauses end at "; " or ", " outside parentheses; a dropped clause takes the separator before it."""
    if not _TRAINER_CLAUSE.search(line):
        return line
    pieces: list[tuple[str, str]] = []   # (separator before, clause)
    depth, start, sep = 0, 0, ""
    for i, ch in enumerate(line):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch in ";," and line[i + 1:i + 2] == " ":
            pieces.append((sep, line[start:i]))
            sep, start = ch + " ", i + 2
    pieces.append((sep, line[start:]))
    kept = [(sp, c) for sp, c in pieces if not _TRAINER_CLAUSE.search(c)]
    if not kept:
        return ""
    out = kept[0][1] + "".join(sp + c for sp, c in kept[1:])
    out = out.strip()
    return out + ("." if out and not out.endswith((".", ")", ":", "`")) else "")


def in_terms(findings: list[Finding], framework: str | None) -> list[Finding]:
    """Every finding's message and fix lines said in the framework's terms (``say``); a relaunch command written
    as an ms-swift command is offered to an ms-swift run only (a framework not told: one whose command was read
    would have been told by it)."""
    from dataclasses import replace
    out = []
    for f in findings:
        fix = tuple(x for x in (say(line, framework) for line in f.fix) if x)
        msg = say(f.message, framework) or f.message
        cmd = f.command if framework == "ms-swift" or (f.command and "swift " not in f.command
                                                       and "NPROC_PER_NODE" not in f.command) else ""
        if fix != f.fix or msg != f.message or cmd != f.command:
            f = replace(f, fix=fix, message=msg, command=cmd)
        out.append(f)
    return out


def _value_of(line: str, m: re.Match) -> tuple[str | None, str]:
    """(value, what follows it) of a flag match: a sentence's next word is not a value (``--temperature at 0.9``)."""
    value = m.group(2)
    if value is None:
        return None, ""
    stripped = value.rstrip(":,.;")
    if not _VALUE.match(stripped):
        return None, m.group(0)[len(m.group(1)):]
    return stripped, value[len(stripped):]


def _swift_step(line: str) -> bool:
    """A line that is ms-swift's own step (``ms-swift: ...``) or an unlabelled ms-swift command."""
    return line.lstrip().lower().startswith("ms-swift:") or bool(_SWIFT_CMD.search(line) and "ms-swift" not in line)


def _quoted(line: str, m: re.Match) -> bool:
    """The flag at ``m`` is inside a `code span`: a quote of the log or the command, kept as the run wrote it."""
    return line.count("`", 0, m.start()) % 2 == 1


def _labelled(line: str, m: re.Match) -> bool:
    """The flag at ``m`` is labelled as ms-swift's spelling (``ms-swift --eval_strategy no``)."""
    return "ms-swift" in line[max(0, m.start() - 12):m.start()]


# a lever by the name it has outside any one trainer (vLLM's engine arguments, the GRPO settings trl and ms-swift share)
_NEUTRAL: dict[str, str | None] = {
    "--vllm_gpu_memory_utilization": "vLLM's gpu_memory_utilization {v}",
    "--vllm_max_model_len": "vLLM's max_model_len {v}",
    "--vllm_tensor_parallel_size": "vLLM's tensor_parallel_size {v}",
    "--tensor_parallel_size": "vLLM's tensor_parallel_size {v}",
    "--vllm_enforce_eager": "vLLM's enforce_eager {v}",
    "--vllm_limit_mm_per_prompt": "vLLM's limit_mm_per_prompt {v}",
    "--vllm_mode": "vLLM in {v} mode",
    "--vllm_server_host": "the vLLM server's host {v}",
    "--vllm_server_port": "the vLLM server's port {v}",
    "--use_vllm": "use_vllm {v}",
    "--sleep_level": "vLLM's sleep mode",
    "--max_length": "max_length {v}",
    "--ddp_timeout": "ddp_timeout {v}",
    "--tuner_type": "{v} training",
    "--train_type": "{v} training",
    "--deepspeed": "DeepSpeed {v}",
    "--attn_impl": "the model's attention implementation {v} (transformers: attn_implementation=\"{v}\")",
    "--torch_dtype": "load the model with torch_dtype={v}",
    "--reward_funcs": "reward_funcs",
    "--reward_weights": "reward_weights",
    "--target_modules": "the LoRA target_modules {v}",
}
# vLLM's own server options (vllm/engine/arg_utils.py EngineArgs, `vllm serve --help`): a run whose only runtime told is
# vLLM
_VLLM_SERVE: dict[str, str] = {
    "--vllm_gpu_memory_utilization": "--gpu-memory-utilization {v}",
    "--vllm_max_model_len": "--max-model-len {v}",
    "--vllm_tensor_parallel_size": "--tensor-parallel-size {v}",
    "--tensor_parallel_size": "--tensor-parallel-size {v}",
    "--vllm_enforce_eager": "--enforce-eager",
    "--vllm_max_num_seqs": "--max-num-seqs {v}",
    "--vllm_limit_mm_per_prompt": "--limit-mm-per-prompt {v}",
}


# LLaMA-Factory's YAML keys where they differ from the neutral names (src/llamafactory/hparams: DataArguments.cutoff_len,
# FinetuningArguments.lora_target, ModelArguments' vllm_maxlen / vllm_gpu_util / vllm_enforce_eager (0.7-0.9); the rest
# are transformers' TrainingArguments, taken as they are): a precision is its bf16 / fp16 switch, not a torch_dtype
_LLAMAFACTORY: dict[str, str] = {
    "--max_length": "cutoff_len {v}",
    "--target_modules": "lora_target {v}",
    "--vllm_max_model_len": "vllm_maxlen {v}",
    "--vllm_gpu_memory_utilization": "vllm_gpu_util {v}",
    "--vllm_enforce_eager": "vllm_enforce_eager true",
}
_LF_DTYPE_FLAG = lazyre.compile(r"--torch_dtype[ =](bfloat16|float16|float32)\b")
_LF_DTYPE = {"bfloat16": "`bf16: true` in the training YAML", "float16": "`fp16: true` in the training YAML",
             "float32": "neither `bf16` nor `fp16` in the training YAML (float32)"}


def _lf_dtype(m: re.Match) -> str:
    return _LF_DTYPE[m.group(1)]


def _say_table(line: str, table: dict[str, str]) -> str | None:
    """A line in another framework's own settings (verl's Hydra overrides, OpenRLHF's flags); None when one of its
    ms-swift or trl levers has none there."""
    return _translate(line, table, neutral=False)


def _say_neutral(line: str, table: dict[str, str] | None = None) -> str | None:
    """A line for a framework not told: each lever by its neutral name (``num_generations 4``, ``vLLM's
    gpu_memory_utilization 0.5``), or by ``table``'s term when the runtime that ran has one (vLLM serve's options);
    None when the line rests on an ms-swift-only lever (no neutral name) or an ms-swift command."""
    return _translate(line, table or {}, neutral=True)


def _translate(line: str, table: dict[str, str], neutral: bool) -> str | None:
    if _swift_step(line):
        return None
    if (_BOTH.search(line) and "ms-swift" in line) or (neutral and _LAUNCHER.search(line)):
        return line  # both spellings given already, or a launcher's or vLLM server's own options
    dropped = False

    def flag(m: re.Match) -> str:
        nonlocal dropped
        name = m.group(1)
        if _labelled(line, m) or _quoted(line, m):
            return m.group(0)
        value, tail = _value_of(line, m)
        term = table.get(name)
        if term is None and neutral:
            term = _NEUTRAL.get(name) or (f"{name[2:]} {{v}}" if name[2:] in GRPO_FIELDS and name not in _FLAGS
                                          else None)
        if term is None:
            if name in _FLAGS or name[2:] in GRPO_FIELDS:
                dropped = True  # a lever that has no name here (ms-swift-only, or not this framework's)
            return m.group(0)
        if value is None:  # the setting named, no value given
            named = term.replace(" {v}", "").replace("={v}", "")
            return (named if "{v}" not in named else name[2:]) + tail  # a term built around its value: the plain name
        return term.replace("{v}", value.strip("\"'")) + tail

    out = _FLAG.sub(flag, line)
    if dropped:
        return None

    def env(m: re.Match) -> str:
        if m.group(1) in table:
            return table[m.group(1)].replace("{v}", m.group(2) or "N")
        if not neutral:
            return m.group(0)
        raw = m.group(2) or ""
        v = raw.rstrip(".,;:")
        return _ENV[m.group(1)].replace("{v}", v or "N").split(" (", 1)[0] + (f" ({v})" if v else "") + raw[len(v):]

    return _ENVVAR.sub(env, out).replace("the same the number", "the same number")
