"""Which kind of training ran: GRPO, or another trainer (DPO and its preference relatives, SFT, PPO, a reward model),
or a model server with no trainer at all. Sentences that hold only for GRPO (generation groups, num_generations,
GRPOConfig) are checked against it (doctor/claims.py), so that a DPO or SFT run never reads GRPO advice as its own.

Evidence, strongest first, the first that tells decides:
- the configuration: ms-swift's ``rlhf_type`` (args.json, the argument dump, ``--rlhf_type``), the swift subcommand
  (``swift sft``, ``swift pt``, ``swift rollout`` serves GRPO), trl's CLI (``trl dpo``), verl's
  ``algorithm.adv_estimator=grpo`` override, a trl config dump (``DPOConfig(``);
- the frames: the trainer module that ran (trl ``trl/trainer/dpo_trainer.py``, ms-swift
  ``swift/trainers/rlhf_trainer/grpo_trainer.py``, copies named ``*grpo_trainer.py``), else a user script named for
  its method (``train_dpo.py``, open-r1's ``grpo.py``);
- the log's text: trainer and config class names (``DPOTrainer``, ``GRPOConfig``) when one kind alone is named, and
  transformers' own Trainer named as what ran ("with huggingface Trainer": supervised);
- the metric rows: trl's and ms-swift's GRPO trainers log ``reward_std`` / ``frac_reward_zero_std`` /
  ``completions/...``; trl's DPO, ORPO, CPO and KTO trainers log ``rewards/chosen``, ``rewards/margins`` and
  ``logps/chosen`` (trl/trainer/dpo_trainer.py ``get_batch_loss_metrics``); rows with a loss and no reward of any
  kind come from a trainer that scores nothing (supervised training).

None when nothing tells: the reader then keeps GRPO wording, grpo-doctor's default subject.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .. import lazyre

# kinds whose training samples groups of completions per prompt and scores them (num_generations, group advantages)
GROUP_KINDS = frozenset({"grpo", "rloo", "dapo", "gspo", "drgrpo"})
PREFERENCE_KINDS = frozenset({"dpo", "kto", "orpo", "cpo", "simpo", "ipo", "bco", "online_dpo", "preference"})
# kinds that run no reward function: supervised training, pre-training, a server, and the preference trainers
UNSCORED_KINDS = PREFERENCE_KINDS - {"online_dpo"} | {"sft", "pt", "supervised", "serve", "infer"}
# a preference trainer's metric keys for the policy's own values (trl dpo_trainer.py get_batch_loss_metrics:
# rewards/chosen, logps/rejected, logits/chosen; some loops add a suffix: rewards_train/chosen)
PREFERENCE_KEY = r"(?:rewards|logps|logits)(?:_\w+)?/(?:chosen|rejected|margins)"

LABEL = {"dpo": "DPO", "kto": "KTO", "orpo": "ORPO", "cpo": "CPO", "simpo": "SimPO", "ipo": "IPO", "bco": "BCO",
          "online_dpo": "online DPO", "preference": "preference (DPO-style)", "sft": "SFT", "pt": "pre-training",
          "ppo": "PPO", "rm": "reward-model", "reward": "reward-model", "gkd": "GKD", "supervised": "supervised",
          "serve": "model-serving", "infer": "inference", "prm": "process-reward-model", "rloo": "RLOO", "grpo": "GRPO"}
# trl's config class per trainer (trl/trainer/<kind>_config.py)
CONFIG_CLASS = {"grpo": "GRPOConfig", "dpo": "DPOConfig", "sft": "SFTConfig", "kto": "KTOConfig", "orpo": "ORPOConfig",
                "cpo": "CPOConfig", "ppo": "PPOConfig", "rloo": "RLOOConfig", "gkd": "GKDConfig", "rm": "RewardConfig",
                "reward": "RewardConfig", "online_dpo": "OnlineDPOConfig", "bco": "BCOConfig", "prm": "PRMConfig"}

_SWIFT_CMD = lazyre.compile(r"(?:^|[\s;/])swift\s+(rlhf|sft|pt|rollout|deploy|infer)\b|swift[./]cli[./](rlhf|sft|pt|rollout|deploy|infer)\b")
_RLHF_TYPE = lazyre.compile(r"--rlhf_type[= ]+['\"]?([a-z_]+)")
_TRL_CLI = lazyre.compile(r"(?:^|[\s;/])trl\s+(sft|dpo|grpo|kto|rloo|orpo|cpo|ppo|reward|gkd|online_dpo)\b")
# verl's override and OpenRLHF's flag (openrlhf/cli/train_ppo_ray.py: group_norm is its GRPO)
_ADV = lazyre.compile(r"\balgorithm\.adv_estimator=['\"]?(\w+)|--advantage_estimator[= ]+['\"]?(\w+)")
_VLLM_SERVE = lazyre.compile(r"(?:^|[\s;/])vllm\s+serve\b|vllm\.entrypoints\.openai\.api_server")
# LLaMA-Factory's serving and chat commands (llamafactory/launcher.py, 0.9: api, chat, webchat; cli.py's Command before)
_LF_CLI = lazyre.compile(r"(?:^|[\s;/])(?:llamafactory-cli|lmf)\s+(api|chat|webchat)\b")
_LF_KIND = {"api": "serve", "chat": "infer", "webchat": "infer"}
# a model server's entry point in the frames: vLLM's OpenAI server and CLI, and trl's rollout server (trl 0.16+
# trl/scripts/vllm_serve.py), which builds its vLLM engine in the server process, not in a trainer
_SERVER_FILE = lazyre.compile(r"trl/scripts/vllm_serve\.py$|vllm/entrypoints/(?:openai/api_server|cli/serve)\.py$")
_TRAINER_FILE = lazyre.compile(r"(?:^|[/_])(grpo|dpo|sft|ppo|kto|orpo|cpo|rloo|reward|gkd|online_dpo|bco|prm)_trainer\.py$"
                               # LLaMA-Factory keeps one folder per stage: src/llamafactory/train/<stage>/trainer.py
                               # (and its workflow.py, which runs the stage: run_sft, run_dpo...)
                               r"|(?:llamafactory|llmtuner)/train/(sft|dpo|kto|ppo|rm|pt)/(?:trainer|workflow)\.py$")
# "ppo" is left out: verl's and rLLM's entry points (main_ppo.py, train_agent_ppo.py) run GRPO as well
_SCRIPT = lazyre.compile(r"(?:^|[/_])(grpo|dpo|sft|kto|orpo|simpo|pretrain)(?:_[\w]*)?\.py$")
_CLASS = lazyre.compile(r"(?:\b|(?<=[a-z0-9]))(GRPO|DPO|SFT|PPO|KTO|ORPO|CPO|RLOO|GKD|OnlineDPO|Reward)(?:Trainer\b|Config\()")
# a launch command that runs a script named for its method ("python3 llm_sft.py --sft_type lora": ms-swift 2.x's
# examples; "python dpo_training.py"): the same names as a frame's script, read from the command itself
_SCRIPT_RUN = lazyre.compile(r"\bpython[\d.]*\s+(?:-\w+\s+)*\S*?(?:^|[/_])(grpo|dpo|sft|kto|orpo|simpo|pretrain)"
                             r"(?:_\w*)?\.py\b")
_SWIFT_SUB = {"sft": "sft", "pt": "pt", "rollout": "grpo", "deploy": "serve", "infer": "infer"}
_ADV_KIND = {"gae": "ppo", "group_norm": "grpo"}
# OpenRLHF's entry modules (openrlhf/cli/): train_ppo(_ray) runs PPO unless --advantage_estimator says otherwise
# (train_ppo_ray.py: default "gae")
_OPENRLHF_CLI = lazyre.compile(r"\bopenrlhf\.cli\.(train_ppo(?:_ray)?|train_sft|train_dpo|train_rm|train_kto|train_prm)\b")
# LLaMA-Factory's stage (hparams/finetuning_args.py: pt, sft, rm, ppo, dpo, kto), with its finetuning_type beside it
_LLAMAFACTORY_STAGE = {"pt": "pt", "sft": "sft", "rm": "reward", "ppo": "ppo", "dpo": "dpo", "kto": "kto"}
_OPENRLHF_KIND = {"train_ppo": "ppo", "train_ppo_ray": "ppo", "train_sft": "sft", "train_dpo": "dpo",
                  "train_rm": "reward", "train_kto": "kto", "train_prm": "prm"}


@dataclass(frozen=True)
class TrainerKind:
    """Which trainer ran (grpo, dpo, sft...) and where that was read."""
    kind: str | None     # "grpo", "dpo", "sft", "ppo", "supervised", "serve", ... (None: not told)
    source: str          # config | frames | text | metrics | none

    @property
    def label(self) -> str:
        return LABEL.get(self.kind or "", self.kind or "unknown")

    @property
    def config_class(self) -> str | None:
        return CONFIG_CLASS.get(self.kind or "")


def _norm(kind: str) -> str:
    kind = kind.lower()
    if kind == "online_dpo":
        return kind
    if kind.startswith("grpo") or kind in GROUP_KINDS:
        return "grpo" if kind.startswith("grpo") else kind
    return {"reward": "rm", "pretrain": "pt", "onlinedpo": "online_dpo"}.get(kind, kind)


def from_config(args: dict, command: str | None, texts: Iterable[str]) -> str | None:
    rlhf_type = args.get("rlhf_type")
    if isinstance(rlhf_type, str) and rlhf_type.strip():
        return _norm(rlhf_type.strip())
    stage = args.get("stage")
    if isinstance(stage, str) and "finetuning_type" in args and stage.strip() in _LLAMAFACTORY_STAGE:
        return _LLAMAFACTORY_STAGE[stage.strip()]
    for text in texts:
        m = _RLHF_TYPE.search(text)
        if m:
            return _norm(m.group(1))
        m = _SWIFT_CMD.search(text)
        if m and (m.group(1) or m.group(2)) in _SWIFT_SUB:
            return _SWIFT_SUB[m.group(1) or m.group(2)]
        m = _TRL_CLI.search(text)
        if m:
            return _norm(m.group(1))
        m = _ADV.search(text)
        if m:
            adv = (m.group(1) or m.group(2)).lower()
            return _ADV_KIND.get(adv, _norm(adv))
        if _VLLM_SERVE.search(text):
            return "serve"
        m = _LF_CLI.search(text)
        if m:
            return _LF_KIND[m.group(1)]
        m = _OPENRLHF_CLI.search(text)
        if m:
            return _OPENRLHF_KIND[m.group(1)]
        m = _SCRIPT_RUN.search(text) if ".py" in text else None
        if m:
            return _norm(m.group(1))
    if command in _SWIFT_SUB:
        return _SWIFT_SUB[command]
    return None


def from_frames(paths: Iterable[str], is_library: object = None) -> str | None:
    """The trainer module innermost in the stacks, else a user script named for its method, else a model server's
    entry point."""
    trainer = script = server = None
    for path in paths:
        p = path.replace("\\", "/")
        if _SERVER_FILE.search(p):
            server = "serve"
            continue
        m = _TRAINER_FILE.search(p)
        if m and "/openrlhf/" in p:
            continue   # OpenRLHF runs GRPO through its ppo_trainer.py too (--advantage_estimator group_norm)
        if m:
            trainer = _norm(m.group(1) or m.group(2))
            continue
        m = _SCRIPT.search(p)
        if m and not (callable(is_library) and is_library(p)):
            script = _norm(m.group(1))
    return trainer or script or server


# transformers' own Trainer named as what ran ("deepspeed ZeRO-3 with huggingface Trainer"): a supervised loop; trl's
# trainers subclass it, but a person running one names it (GRPOTrainer, "trl")
_PLAIN_TRAINER = lazyre.compile(r"(?i:\b(?:hugging ?face|HF|transformers)(?:'s)?\s+)Trainer\b(?!\s*\()")


def from_text(texts: Iterable[str]) -> str | None:
    """The one trainer kind the log's class names, or a serving or chat command pasted among its lines, point at
    (several different ones: not told)."""
    seen: set[str] = set()
    for t in texts:
        seen.update(_norm(m.group(1)) for m in _CLASS.finditer(t))
        if "Trainer" in t and _PLAIN_TRAINER.search(t):
            seen.add("supervised")
        m = _LF_CLI.search(t)
        if m:
            seen.add(_LF_KIND[m.group(1)])
    return next(iter(seen)) if len(seen) == 1 else None


@dataclass
class MetricMarks:
    """What the logged metric keys say of the trainer (filled from each row layout seen, doctor/engine/state.py)."""
    grouped: bool = False       # GRPO's reward_std / frac_reward_zero_std / completions/...
    preference: bool = False    # rewards/chosen, rewards/margins, logps/chosen
    scored: bool = False        # any reward or score key at all

    def note(self, keys: Iterable[str]) -> None:
        for key in keys:
            k = key.lower()
            if "reward_std" in k or "frac_reward_zero_std" in k or k.startswith("completions/") or \
                    k.endswith("completion_length") or k.startswith("train/reward_std"):
                self.grouped = True
            if _PREFERENCE.search(k):
                self.preference = True
            if "reward" in k or "score" in k or k.startswith("kl") or "/kl" in k:
                self.scored = True

    def kind(self, loss_rows: int) -> str | None:
        """The kind the keys point at; ``loss_rows``: rows that logged a loss (two or more with no reward or score
        key anywhere: a trainer that scores nothing)."""
        if self.grouped:
            return "grpo"
        if self.preference:
            return "preference"
        if loss_rows >= 2 and not self.scored:
            return "supervised"
        return None


_PREFERENCE = lazyre.compile(r"(?:^|/)" + PREFERENCE_KEY + r"\b")


def own_loss(frames: Iterable[tuple[str, str]]) -> str | None:
    """"supervised" when a stack runs transformers' own ``Trainer.compute_loss`` (transformers/trainer.py, function
    compute_loss): every GRPO, DPO, PPO and reward trainer (trl's, ms-swift's, LLaMA-Factory's) overrides it, so the
    loop that ran is a plain or supervised one."""
    return "supervised" if any(path.replace("\\", "/").endswith("transformers/trainer.py") and func == "compute_loss"
                               for path, func in frames) else None


def detect(args: dict, command: str | None, commands: list[str], texts: list[str], paths: Iterable[str],
           marks: MetricMarks | None = None, loss_rows: int = 0, is_library: object = None,
           frames: Iterable[tuple[str, str]] = ()) -> TrainerKind:
    """``commands``: the launch commands read (command.txt, launcher lines); ``texts``: those and the log's lines
    (tails, exception lines); ``paths``: the frames' files; ``frames``: (file, function) of the same frames."""
    for source, kind in (("config", lambda: from_config(args, command, commands)),
                         ("frames", lambda: from_frames(paths, is_library) or own_loss(frames)),
                         ("text", lambda: from_text(texts)),
                         ("metrics", lambda: marks.kind(loss_rows) if marks is not None else None)):
        got = kind()
        if got:
            return TrainerKind(got, source)
    return TrainerKind(None, "none")


def of_run(run, exceptions=(), open_tracebacks=(), tails=None, marks: MetricMarks | None = None,
           loss_rows: int = 0) -> TrainerKind:
    """``detect`` over what a session holds (the arguments of doctor/swift/framework.py ``of_run``)."""
    from .framework import is_library_path
    frames = [(f.path, f.func) for e in exceptions for f in e.frames]
    frames += [(f.path, f.func) for _, stack in open_tracebacks for f in stack]
    paths = [path for path, _ in frames]
    commands = list(run.command_texts)
    texts = commands + [ln.text for tail in (tails or {}).values() for ln in tail]
    texts += [e.raw for e in list(exceptions)[:20]]
    texts += [v for v in run.implied.values() if isinstance(v, str)]
    return detect(run.args, run.command, commands, texts, paths, marks, loss_rows, is_library_path, frames)


__all__ = ["CONFIG_CLASS", "GROUP_KINDS", "LABEL", "PREFERENCE_KEY", "PREFERENCE_KINDS", "UNSCORED_KINDS", "MetricMarks", "TrainerKind", "detect", "of_run"]
