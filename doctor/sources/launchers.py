"""Launch commands of the frameworks other than ms-swift, read back into run facts: the launcher's process layout and
the program's own settings.

- ``accelerate launch [--num_processes N] [--num_machines M] [--machine_rank R] [--main_process_port P]
  [--config_file x.yaml] script.py --flag v`` (accelerate/commands/launch.py: ``--num_processes`` counts the
  processes of all machines);
- ``deepspeed [--num_gpus N] [--num_nodes M] [--master_port P] [--module] script.py|module --flag v``
  (deepspeed/launcher/runner.py: ``--num_gpus`` is per node);
- ``torchrun`` / ``python -m torch.distributed.run|launch`` ``[--nproc_per_node N] [--nnodes M] [--node_rank R]
  [--master_port P] script.py --flag v`` (torch/distributed/run.py);
- ``python[3] [-m module | script.py] ...`` when the program is verl's or OpenRLHF's entry point, or its flags are
  GRPO settings.

The program's settings: ``--flag v`` pairs (argparse / HfArgumentParser scripts: trl, open-r1, OpenRLHF) and Hydra
overrides ``a.b.c=v`` (verl: ``python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=5 ...``,
verl/examples/grpo_trainer/run_qwen2-7b.sh at 3f38806). verl's and OpenRLHF's own names are kept as they are and
also given under the names the rules read (``num_generations``, ``vllm_gpu_memory_utilization``...), from the
one equivalence table of doctor/swift/terms.py (``read_as``).

The launcher's numbers come from its own options only: a world size is never taken from a script flag, a path or
a date, and a value that is not a number (``--num_processes $NGPUS``) is not one. Sources never judge.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .. import lazyre
from ..values import as_int
from .argv import flag_dict, group_flags, parse_value, split_shell

_ASSIGN = lazyre.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# a Hydra override: key.path=value, with Hydra's +/++/~ prefixes (verl's overrides are dotted)
_OVERRIDE = lazyre.compile(r"^(?:\+\+|\+|~)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)=(.*)$", re.S)
_LINE_END = lazyre.compile(r"(?<!\\)\r?\n")
# LLaMA-Factory's CLI and its short alias, by path or name
_LLAMAFACTORY = r"(?:\S*/)?(?:llamafactory-cli|lmf)"
_PYTHON = lazyre.compile(r"^(?:\S*/)?(?:python(?:\d(?:\.\d+)?)?|uv|pypy3?)$")
# where a training launch starts in a line of text (a log line, a script): the launcher or the program's entry point
LAUNCH_START = lazyre.compile(
    r"(?:^|(?<=[\s;&|(`'\"]))(?:accelerate\s+launch\b|torchrun\b|deepspeed\s+(?=-|\S+\.py\b)|"
    r"(?:\S*/)?python(?:\d(?:\.\d+)?)?\s+(?:-u\s+)?-m\s+(?:torch\.distributed\.(?:run|launch)|verl\.trainer\.main(?:_|(?![\w.]))|"
    r"recipe\.\w+\.main_|openrlhf\.cli\.)|(?:\S*/)?python(?:\d(?:\.\d+)?)?\s+(?:-u\s+)?\S*open_r1/\w+\.py\b|"
    # OpenRLHF's example scripts keep the module and its flags in a heredoc (`read -r -d '' training_commands <<EOF`)
    # that `deepspeed --module $training_commands` runs: the module name opens a line
    r"(?<![\S])openrlhf\.cli\.\w+(?=\s)|"
    # LLaMA-Factory's entry points before its CLI (README of 0.1-0.6: `python src/train_bash.py --stage sft ...`; 0.7-0.8
    # `src/train.py`): the flags follow the script
    r"(?:\S*/)?python(?:\d(?:\.\d+)?)?\s+(?:-u\s+)?(?:\S*/)?src/train(?:_bash)?\.py\b|"
    # LLaMA-Factory's CLI (src/llamafactory/cli.py): `llamafactory-cli train [config.yaml] [--key value ...]`, the
    # flags HfArgumentParser reads when no YAML is given; `lmf` is its short alias
    rf"{_LLAMAFACTORY}\s+train\b)")
LLAMAFACTORY_CLI = lazyre.compile(rf"{_LLAMAFACTORY}\s")
# the words that let a log line holding a launch reach the run config (doctor/engine/state.py's gate)
LITERALS = ("accelerate launch", "torchrun", "deepspeed ", "verl.trainer.main", "openrlhf.cli.", "open_r1/",
            "executing job with overrides",
            "torch.distributed.run", "torch.distributed.launch", "main_dapo", "llamafactory-cli train", "lmf train",
            "src/train_bash.py", "src/train.py")

# the launchers' boolean options (no value follows): accelerate/commands/launch.py, deepspeed/launcher/runner.py,
# torch/distributed/run.py
_BOOL_OPTS = frozenset({
    "cpu", "multi_gpu", "tpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "use_xpu", "quiet", "debug",
    "same_network", "no_python", "module", "m", "enable_cpu_affinity", "downcast_bf16", "dynamo_use_fullgraph",
    "dynamo_use_dynamic", "fsdp_offload_params", "offload_param_device", "zero3_init_flag", "standalone", "no_local_rank",
    "autotuning", "force_multi", "save_pid", "enable_each_rank_log", "no_ssh_check", "bind_cores_to_rank", "u",
    "run_path", "no-python", "no_ssh", "elastic_training", "use_env"})
# the launchers' options that take a value (so a value is never read as the program)
_VALUE_OPTS = frozenset({
    "num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port", "config_file",
    "mixed_precision", "gpu_ids", "deepspeed_config_file", "zero_stage", "gradient_accumulation_steps",
    "dynamo_backend", "rdzv_backend", "rdzv_conf", "rdzv_endpoint", "rdzv_id", "max_restarts", "monitor_interval",
    "num_cpu_threads_per_process", "deepspeed_multinode_launcher", "deepspeed_hostfile", "fsdp_sharding_strategy",
    "num_gpus", "num_nodes", "master_port", "master_addr", "include", "exclude", "hostfile", "launcher",
    "launcher_args", "node_rank", "nproc_per_node", "nnodes", "log_dir", "redirects", "tee", "local_addr",
    "min_nodes", "max_nodes", "role", "start_method", "log_level", "ssh_port", "num_accelerators"})


@dataclass
class LaunchRead:
    """One training launch read back: the launcher, its process layout, the program and its settings."""

    launcher: str                                   # accelerate | deepspeed | torchrun | python | hydra
    program: str | None = None                      # script path or module
    layout: dict[str, Any] = field(default_factory=dict)   # nproc_per_node, nnodes, node_rank, master_port, ...
    launcher_opts: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)      # the program's --flags, as typed
    overrides: dict[str, Any] = field(default_factory=dict)  # the program's Hydra overrides, as typed
    framework: str | None = None                    # the framework the program is: verl, openrlhf, trl (open-r1)
    recipe: str | None = None                       # open-r1

    def world_size(self) -> int | None:
        n, m = as_int(self.layout.get("nproc_per_node")), as_int(self.layout.get("nnodes")) or 1
        return n * m if n else None


def _norm(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def _framework_of(program: str | None, overrides: dict[str, Any], flags: dict[str, Any]) -> tuple[str | None, str | None]:
    p = (program or "").replace("\\", "/")
    # EasyR1 (verl's package name, its own entry point and config: examples/config.yaml's worker.* and a config= file)
    if re.search(r"(?:^|[./])verl[./]trainer[./]main(?:\.py)?$", p) or \
            any(k.startswith("worker.") or k == "config" for k in overrides):
        return "easyr1", None
    if re.search(r"(?:^|[./])verl[./]trainer[./]main_|^recipe[./]\w+[./]main_", p) or \
            any(k.startswith(("actor_rollout_ref.", "critic.", "algorithm.")) for k in overrides):
        return "verl", None
    if re.search(r"(?:^|[./])openrlhf[./]cli[./]", p) or "n_samples_per_prompt" in flags or "vllm_num_engines" in flags:
        return "openrlhf", None
    if "open_r1/" in p or p.startswith("open_r1."):
        return "trl", "open-r1"
    # LLaMA-Factory's old entry points take its own flags (--stage sft, --finetuning_type lora)
    if re.search(r"(?:^|/)src/train(?:_bash)?\.py$", p) and ("stage" in flags or "finetuning_type" in flags):
        return "llamafactory", None
    return None, None


def _split_launcher(tokens: list[str], start: int, bools: frozenset[str] = _BOOL_OPTS) -> tuple[list[str], int, bool]:
    """The launcher's own tokens from ``start`` up to its program, the program's index (len(tokens) when none) and
    whether the program is a module (``-m`` / ``--module``)."""
    i, module = start, False
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("-") and len(t) > 1:
            name = _norm(t.partition("=")[0])
            if name in ("m", "module"):
                module = True
            if "=" in t or name in bools:
                i += 1
                continue
            i += 2 if name in _VALUE_OPTS or not (i + 1 < len(tokens) and tokens[i + 1].endswith(".py")) else 1
            continue
        return tokens[start:i], i, module
    return tokens[start:], len(tokens), module


def read_launch(text: str) -> LaunchRead | None:
    """The training launch a command line holds (the first one, from its launcher or entry point), else None."""
    m = LAUNCH_START.search(text)
    if m is None:
        return None
    body = text[m.start():]
    end = _LINE_END.search(body)  # the command ends at a newline no backslash continues
    tokens = split_shell(body[:end.start()] if end else body)
    if not tokens:
        return None
    head = tokens[0].rsplit("/", 1)[-1]
    if head == "accelerate":
        launcher, i = "accelerate", 2
    elif head in ("torchrun", "deepspeed"):
        launcher, i = head, 1
    elif head in ("llamafactory-cli", "lmf"):
        return _llamafactory(tokens)
    elif head.startswith("openrlhf.cli."):
        launcher, i = "deepspeed", 0   # the heredoc's module: `deepspeed --module` runs it
    elif _PYTHON.match(head):
        launcher, i = "python", 1
        while i < len(tokens) and tokens[i] in ("-u", "-O", "-B"):
            i += 1
        if i + 1 < len(tokens) and tokens[i] == "-m" and tokens[i + 1].startswith("torch.distributed."):
            launcher, i = "torchrun", i + 2
    else:
        return None
    own, j, _module = _split_launcher(tokens, i)
    opts = flag_dict(group_flags(own, normalize=True)[0])
    program = tokens[j] if j < len(tokens) else None
    rest = tokens[j + 1:] if program else []
    rest = _until_separator(rest)
    overrides: dict[str, Any] = {}
    argv: list[str] = []
    for t in rest:
        o = _OVERRIDE.match(t) if not t.startswith("-") else None
        if o:
            val = o.group(2)
            overrides[o.group(1)] = parse_value(val.strip("'\"") if val[:1] in "'\"" and val[-1:] == val[:1] else val)
        else:
            argv.append(t)
    flags = flag_dict(group_flags(argv, normalize=True)[0])
    read = LaunchRead(launcher, program, {}, opts, flags, overrides)
    read.framework, read.recipe = _framework_of(program, overrides, flags)
    read.layout = _layout(launcher, opts)
    return read


def _until_separator(words: list[str]) -> list[str]:
    """The words of a program up to a shell separator that split_shell kept as a word (`;`, `&&`, `|`, `>`)."""
    for k, t in enumerate(words):
        if t in (";", "&&", "||", "|", "&", ">", ">>", "2>&1") or t.startswith((">", "2>")):
            return words[:k]
    return words


def _llamafactory(tokens: list[str]) -> LaunchRead:
    """`llamafactory-cli train [config.yaml] --key value ...`: the program is the config file when one is given,
    the flags are LLaMA-Factory's own (model_name_or_path, finetuning_type, cutoff_len, deepspeed...); its process
    layout comes from the environment (FORCE_TORCHRUN, NPROC_PER_NODE), which the run's env reader keeps."""
    rest = _until_separator(tokens[2:])
    program = rest[0] if rest and not rest[0].startswith("-") else "train"
    argv = rest[1:] if program != "train" else rest
    flags = flag_dict(group_flags(argv, normalize=True)[0])
    return LaunchRead("llamafactory-cli", program, {}, {}, flags, {}, framework="llamafactory")


# Hydra's report of a failed job (hydra/_internal/utils.py run_and_report): `Error executing job with overrides:
# ['a.b=1', ...]`, the job's command-line overrides quoted one by one; a paste cut inside the list keeps the items
# before the cut whole, and those are read
HYDRA_OVERRIDES = "executing job with overrides: ["
_QUOTED_ITEM = lazyre.compile(r"'((?:[^'\\\n]|\\.){1,500})'")


def read_hydra_overrides(text: str) -> LaunchRead | None:
    """The overrides a Hydra job was launched with, from Hydra's failure line, as a launch without a program; None
    when the line holds no dotted override."""
    at = text.find(HYDRA_OVERRIDES)
    if at < 0:
        return None
    overrides: dict[str, Any] = {}
    for item in _QUOTED_ITEM.finditer(text, at + len(HYDRA_OVERRIDES)):
        o = _OVERRIDE.match(item.group(1))
        if o:
            val = o.group(2)
            overrides[o.group(1)] = parse_value(val.strip('"') if val[:1] == '"' and val[-1:] == '"' else val)
    if not overrides:
        return None
    read = LaunchRead("hydra", None, {}, {}, {}, overrides)
    read.framework, read.recipe = _framework_of(None, overrides, {})
    return read


def printed_config(settings: dict[str, Any], framework: str | None) -> LaunchRead:
    """The settings a trainer printed of its own configuration (sources/dict_dump.py), read as its overrides."""
    return LaunchRead("hydra", None, {}, {}, {}, dict(settings), framework)


# each launcher's own option -> the layout key it sets (accelerate's --num_processes is the total: handled apart);
# a node rank of 0 counts, the other numbers only when not 0; nnodes "1:4" (torchrun elastic) is a range: left out
_LAYOUT_OPTS: dict[str, tuple[tuple[str, str], ...]] = {
    "accelerate": (("machine_rank", "node_rank"), ("main_process_port", "master_port"), ("main_process_ip", "master_addr")),
    "deepspeed": (("num_gpus", "nproc_per_node"), ("num_nodes", "nnodes"), ("master_port", "master_port"),
                  ("master_addr", "master_addr")),
    "torchrun": (("nproc_per_node", "nproc_per_node"), ("nnodes", "nnodes"), ("node_rank", "node_rank"),
                 ("master_port", "master_port"), ("master_addr", "master_addr")),
}


def _layout(launcher: str, opts: dict[str, Any]) -> dict[str, Any]:
    """nproc_per_node / nnodes / node_rank / master_port / master_addr from the launcher's own options (numbers only
    where a number was given)."""
    out: dict[str, Any] = {}
    if launcher == "accelerate":
        total, machines = as_int(opts.get("num_processes")), as_int(opts.get("num_machines")) or 1
        if total and total % machines == 0:
            out["nproc_per_node"] = total // machines
            out["nnodes"] = machines
    for option, key in _LAYOUT_OPTS.get(launcher, ()):
        if key == "master_addr":
            if isinstance(opts.get(option), str):
                out[key] = opts[option]
            continue
        n = as_int(opts.get(option))
        if n or (n == 0 and key == "node_rank"):
            out[key] = n
    return out


def _both_names(own: dict[str, Any], table: dict[str, str], args: dict[str, Any]) -> None:
    """Each setting under its own name and, when ``table`` has it, under the name the rules read."""
    for k, v in own.items():
        args[k] = v
        if k in table:
            args.setdefault(table[k], v)


def run_facts(read: LaunchRead) -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings under the names the rules read, process layout) of a launch: a verl or OpenRLHF setting is given
    under its own name and under the rules' name (doctor/swift/terms.py ``read_as``); the layout of a verl launch is
    its ``trainer.n_gpus_per_node`` x ``trainer.nnodes``, of an OpenRLHF one its actor's GPUs."""
    from ..swift.terms import read_as
    args: dict[str, Any] = {}
    layout = dict(read.layout)
    if read.framework == "easyr1":
        _both_names(read.overrides, read_as("easyr1"), args)
        args.setdefault("use_vllm", True)  # EasyR1 generates with vLLM only (verl/workers/rollout/vllm_rollout_spmd.py)
        if as_int(read.overrides.get("trainer.n_gpus_per_node")):
            layout["nproc_per_node"] = as_int(read.overrides["trainer.n_gpus_per_node"])
            layout["nnodes"] = as_int(read.overrides.get("trainer.nnodes")) or 1
        args.update({k: v for k, v in read.flags.items() if k not in args})
        return args, layout
    if read.framework == "verl":
        _both_names(read.overrides, read_as("verl"), args)
        if read.overrides.get("actor_rollout_ref.rollout.name") == "vllm":
            args.setdefault("use_vllm", True)  # verl's rollout engine (ppo_trainer.yaml rollout.name: vllm | sglang | hf)
        if as_int(read.overrides.get("trainer.n_gpus_per_node")):
            layout["nproc_per_node"] = as_int(read.overrides["trainer.n_gpus_per_node"])
            layout["nnodes"] = as_int(read.overrides.get("trainer.nnodes")) or 1
        args.update({k: v for k, v in read.flags.items() if k not in args})
        return args, layout
    if read.framework == "openrlhf":
        _both_names(read.flags, read_as("openrlhf"), args)
        if as_int(read.flags.get("vllm_num_engines")):
            args.setdefault("use_vllm", True)  # "number of vLLM Engines, set to 0 to disable vLLM"
        if as_int(read.flags.get("actor_num_gpus_per_node")) and "nproc_per_node" not in layout:
            layout["nproc_per_node"] = as_int(read.flags["actor_num_gpus_per_node"])
            layout["nnodes"] = as_int(read.flags.get("actor_num_nodes")) or 1
        placed = openrlhf_gpus(read.flags)
        if placed:
            layout["gpus_placed"] = placed
        return args, layout
    args.update(read.flags)
    args.update(read.overrides)
    return args, layout


# OpenRLHF's Ray roles, each a placement group of nodes x GPUs per node (openrlhf/cli/train_ppo_ray.py); the vLLM
# engines take vllm_num_engines x vllm_tensor_parallel_size more
_OPENRLHF_ROLES = ("actor", "ref", "critic", "reward")
_OPENRLHF_SHARED = ("colocate_all_models", "colocate_actor_ref", "colocate_critic_reward")


def openrlhf_gpus(flags: dict[str, Any]) -> int | None:
    """The GPUs an OpenRLHF Ray job places over all its roles, or None when roles share GPUs (colocate flags) or the
    flags do not tell. A critic or reward model the job does not run (no critic_pretrain / reward_pretrain) takes
    none."""
    if any(flags.get(k) not in (None, False, "false", "False") for k in _OPENRLHF_SHARED):
        return None
    total = 0
    for role in _OPENRLHF_ROLES:
        if role == "critic" and not flags.get("critic_pretrain"):
            continue
        if role == "reward" and not flags.get("reward_pretrain"):
            continue
        gpus = as_int(flags.get(f"{role}_num_gpus_per_node"))
        if gpus is None:
            if role == "actor":
                return None
            continue
        total += gpus * (as_int(flags.get(f"{role}_num_nodes")) or 1)
    engines = as_int(flags.get("vllm_num_engines")) or 0
    total += engines * (as_int(flags.get("vllm_tensor_parallel_size")) or 1)
    return total or None


# a plain `python script.py --flags` is a training launch only when its flags are GRPO settings
GRPO_MARKS = frozenset({"num_generations", "rlhf_type", "reward_funcs", "use_vllm", "vllm_mode",
                        "max_completion_length", "n_samples_per_prompt", "steps_per_generation"})


def is_training(read: LaunchRead) -> bool:
    """A launch worth reading: a distributed launcher's, a framework's entry point, or a script with GRPO flags."""
    if read.launcher != "python" or read.framework:
        return read.program is not None or bool(read.layout)
    return any(k in read.flags for k in GRPO_MARKS)


__all__ = ["GRPO_MARKS", "HYDRA_OVERRIDES", "LAUNCH_START", "LITERALS", "LLAMAFACTORY_CLI", "LaunchRead", "is_training",
           "read_hydra_overrides", "read_launch", "run_facts"]
