"""Which training framework ran: ms-swift, trl (GRPOTrainer), unsloth, verifiers, verl, OpenRLHF; and the recipe
around trl (open-r1). Knowledge of how each one shows itself in a log is kept here, once.

Evidence, strongest first: the frames of the parsed tracebacks (the package directories of the library code that
ran), the launch commands (``swift rlhf``, ``trl vllm-serve``, ``accelerate launch ... grpo.py``, ``python -m
verl.trainer.main_ppo``), the log's own format (``[INFO:swift]``, unsloth's banner) and the versions the log
printed. The result is ``(framework, version, recipe)``; ``framework`` is None when nothing points anywhere.

Precedence among frames: a framework that wraps trl (ms-swift's trainers subclass trl's, unsloth patches it,
verifiers and open-r1 call it) wins over trl when both appear in one stack; the sources: ms-swift
``swift/trainers/rlhf_trainer/grpo_trainer.py`` (``class GRPOTrainer(RolloutTrainerMixin, SwiftMixin,
HFGRPOTrainer)``, ms-swift 3.x/4.x), unsloth ``unsloth/models/rl.py`` (patches ``trl.trainer``), verifiers
``verifiers/trainers/grpo_trainer.py`` (subclasses ``transformers.Trainer``, ships its own GRPOTrainer).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .. import lazyre
from ..sources.logtext import VLLM_PROCESSES
from ..textcache import for_short_texts

# (framework, path fragments of its package directory), most specific first
_FRAME_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # EasyR1 (hiyouga/EasyR1) keeps verl's package name; its checkout, and the trainer files verl has under ppo/ or not at
    # all (EasyR1: verl/trainer/main.py, ray_trainer.py, core_algos.py, metrics.py, config.py; verl: main_ppo.py,
    # ppo/ray_trainer.py, ppo/core_algos.py, ppo/metric_utils.py, config/)
    ("easyr1", ("/easyr1/", "/verl/trainer/main.py", "/verl/trainer/ray_trainer.py", "/verl/trainer/core_algos.py",
                "/verl/trainer/metrics.py", "/verl/trainer/config.py")),
    ("verl", ("/verl/trainer/", "/verl/workers/", "/verl/single_controller/", "site-packages/verl/", "/verl/protocol.py",
              "/verl/utils/", "/verl/models/", "/verl/third_party/", "/verl/experimental/")),
    ("openrlhf", ("/openrlhf/",)),
    ("llamafactory", ("/llamafactory/", "/llmtuner/")),
    ("axolotl", ("/axolotl/",)),
    ("unsloth", ("/unsloth/", "unsloth_compiled_cache/", "/unsloth_zoo/")),
    ("verifiers", ("/verifiers/",)),
    # NeMo-RL's package, and its container's checkout (/opt/nemo-rl, with its 3rdparty/ Megatron-Bridge and NeMo copies)
    ("nemo-rl", ("/nemo_rl/", "/opt/nemo-rl/")),
    ("torchtune", ("/torchtune/",)),
    # InternLM's xtuner (its engine runs on mmengine's runner and strategies)
    ("xtuner", ("/xtuner/",)),
    ("ms-swift", ("/swift/trainers/", "/swift/llm/", "/swift/cli/", "/swift/megatron/", "/swift/plugin/",
                  "site-packages/swift/", "/ms-swift/swift/", "/swift/pipelines/", "/swift/rlhf_trainers/")),
    # the package directory, not any folder named trl (a conda env called "trl": envs/trl/lib/...)
    ("trl", ("-packages/trl/", "/trl/trainer/", "/trl/extras/", "/trl/models/", "/trl/scripts/", "/trl/cli")),
)
# a path under an open-r1 checkout (or a fork that keeps its package name): the recipe, trl underneath
_OPEN_R1 = ("open_r1/", "open-r1/", "open-r1-")
# a GRPO trainer file outside the wrappers' packages: a subclass or copy of trl's GRPOTrainer (open-r1 forks copy it
# to src/open_r1/trainer/grpo_trainer.py; rl-swarm's hivemind_grpo_trainer.py subclasses it)
_TRL_COPY = lazyre.compile(r"grpo_trainer\.py$")

_SWIFT_LOG = ("[INFO:swift]", "[WARNING:swift]", "[ERROR:swift]", "swift.cli.", "swift/cli/")
_UNSLOTH_VER = lazyre.compile(r"Unsloth:?\s+(20\d\d\.\d+\.\d+)")
# unsloth's own prints ("Unsloth: Will patch your computer", "🦥 Unsloth: ..."), its imports, its patched names
# (unsloth/models/rl.py: _unsloth_get_batch_samples, UnslothGRPOTrainer)
_UNSLOTH_TEXT = lazyre.compile(r"(?:^|[\s>|*(])Unsloth(?::\s|\s+20\d\d\.)|\bfrom unsloth import\b|\bimport unsloth\b|"
                           r"\b_unsloth_\w+|\bUnsloth\w*Trainer\b|"
                           # the code unsloth writes for the patched trainers and modules (unsloth_zoo's compiler),
                           # named in a line a paste keeps where its frames were not read
                           r"\bunsloth_compiled_cache/|"
                           # a `pip list` row ("unsloth   2026.2.1") and a sentence naming it as what ran
                           r"(?:^|\s)unsloth(?:_zoo)?\s+20\d\d\.\d+|\b(?:in|with|using|via) Unsloth\b")
# (framework, words of which every match holds one, whether in the line lowered, pattern): a pattern that starts with no
# literal is tried at every place of a line (~40 us a 400-character line), the words' test first costs ~1/50 of that.
# The words of a case-blind (re.I) pattern are tested in the line lowered and hold no "i" nor "s": re.I also matches
# them with "\u0131" and "\u017f", which lower() keeps (checked over every code point: no other letter differs)
_CMD = (
    # its CLI's subcommands (swift/cli/main.py ROUTE_MAPPING: sft, pt, rlhf, infer, deploy, rollout, export, ...)
    ("ms-swift", ("swift",), False, lazyre.compile(r"(?:^|[\s;/`])swift\s+(?:rlhf|sft|pt|rollout|infer|deploy|export)\b|"
                                                   r"swift[./]cli[./](?:rlhf|rollout|sft)")),
    # ms-swift 1.x-2.x: its example scripts (examples/pytorch/llm/llm_sft.py, llm_rlhf.py, llm_dpo.py, llm_infer.py call
    # swift.llm's sft_main, rlhf_main, infer_main) and the flags only its argument classes define (swift/llm/utils/
    # argument.py 2.x: sft_type, tuner_backend, model_id_or_path; 3.x-4.x: rlhf_type)
    ("ms-swift", ("llm_", "--sft_type", "--tuner_backend", "--model_id_or_path", "--rlhf_type"), False,
     lazyre.compile(r"(?:^|[\s/])llm_(?:sft|rlhf|dpo|orpo|simpo|infer|export)\.py\b|"
                    r"--(?:sft_type|tuner_backend|model_id_or_path|rlhf_type)\b")),
    # EasyR1's entry point (`python3 -m verl.trainer.main config=examples/config.yaml`) and its overrides of
    # examples/config.yaml (worker.actor.*, worker.rollout.*, worker.ref.*, worker.reward.*)
    ("easyr1", ("verl.trainer.main", "worker."), False,
     lazyre.compile(r"\bverl\.trainer\.main(?![\w.])|(?:^|[\s'\"])worker\.(?:actor|rollout|ref|reward)\.[\w.]+=")),
    ("verl", ("verl.trainer.main_",), False, lazyre.compile(r"\bverl\.trainer\.main_\w+")),
    ("openrlhf", ("openrlhf.cli.",), False, lazyre.compile(r"\bopenrlhf\.cli\.")),
    # verl's Hydra overrides (verl/trainer/config/ppo_trainer.yaml: actor_rollout_ref.*) on a command line, and its
    # recipes' entry points (`python3 -m recipe.dapo.main_dapo`)
    # (Hydra's "Error executing job with overrides: ['actor_rollout_ref.actor...=...', ...]" quotes each override)
    # (and the same keys read by verl's own code, in an assert or an error quoted: "assert config.data.train_batch_size
    # >= config.actor_rollout_ref.actor.ppo_mini_batch_size", verl/workers/fsdp_workers.py; only verl names its
    # configuration so)
    ("verl", ("actor_rollout_ref.", "recipe."), False, lazyre.compile(r"(?:^|[\s'\"])\+{0,2}actor_rollout_ref\.(?:rollout|actor|ref|model)\.[\w.]+=|"
                        r"\bconfig\.actor_rollout_ref\.(?:rollout|actor|ref|model)\.\w+|"
                        r"-m\s+recipe\.\w+\.main_\w+")),
    # a path inside verl's package named in a sentence or a frame ("来自verl/trainer/ppo/ray_trainer.py第479行")
    ("verl", ("verl/",), False, lazyre.compile(r"(?<![A-Za-z0-9_./-])verl/(?:trainer|workers|single_controller|utils)/\w+")),
    # verl's generation entry run as a script (verl/trainer/main_generation.py; its module form is the pattern above)
    ("verl", ("main_generation.py",), False, lazyre.compile(r"\bmain_generation\.py\b")),
    # OpenRLHF's own flags (openrlhf/cli/train_ppo_ray.py: --vllm_num_engines, --actor_num_gpus_per_node)
    ("openrlhf", ("--",), False, lazyre.compile(r"--(?:vllm_num_engines|actor_num_gpus_per_node|ref_num_gpus_per_node)\b")),
    # OpenRLHF's Ray actors in Ray's line prefix (openrlhf/trainer/ray/: launcher.py, ppo_actor.py, ppo_critic.py,
    # vllm_engine.py): ActorModelRayActor, ReferenceModelRayActor, RewardModelRayActor, CriticModelRayActor and
    # LLMRayActor from 0.1 to 0.8.2; PolicyModelActor, ReferenceModelActor, RewardModelActor and CriticModelActor since
    # then, LLMRayActor renamed RolloutRayActor in 0.10.2 (checked at the tags 0.1.0-0.11.0)
    ("openrlhf", (" pid=",), False, lazyre.compile(r"\((?:ActorModelRayActor|ReferenceModelRayActor|CriticModelRayActor|RewardModelRayActor|"
                            r"PolicyModelActor|ReferenceModelActor|CriticModelActor|RewardModelActor|LLMRayActor|"
                            r"RolloutRayActor) pid=\d+")),
    # verl's Ray actors and its console rows (verl/trainer/main_ppo.py TaskRunner / main_task, single_controller's
    # WorkerDict; utils/tracking.py rows "step:N - ... critic/score/mean:...")
    ("verl", (" pid=", "critic/score/mean:"), False, lazyre.compile(r"\((?:main_task|TaskRunner|WorkerDict) pid=\d+|\bcritic/score/mean:")),
    # verl's metric keys (verl/trainer/ppo/metric_utils.py compute_timing_metrics "timing_s/{name}" over its stages;
    # workers/actor/dp_actor.py "actor/pg_loss", "actor/pg_clipfrac"), also in its forks (EasyR1, TinyZero)
    ("verl", ("timing_s/", "actor/"), False, lazyre.compile(r"\btiming_s/(?:gen|adv|ref|old_log_prob|update_actor|update_critic|reward|values|testing|step)\b|"
                        r"\bactor/(?:pg_loss|pg_clipfrac|ppo_kl|entropy_loss)\b")),
    # its package, and its name before 0.6 (llmtuner: "llmtuner.extras.callbacks - {'loss': ...}" log lines)
    # and a script of its checkout in a launcher's argv ("../LLaMA-Factory/src/train_bash.py": its entry point before
    # 0.6 was src/train_bash.py, later src/train.py)
    ("llamafactory", ("llama", "llmtuner", "h.py"), True, lazyre.compile(r"\bllamafactory[-.](?:cli|train|hparams|data|model)\b|\bllamafactory-cli\b|"
                                # its launcher in torchrun's failure summary ("src/llamafactory/launcher.py FAILED"),
                                # and pip naming it as what requires a package ("required by llamafactory")
                                r"\bllamafactory/launcher\.py\b|\brequired by llamafactory\b|"
                                r"\bllmtuner\.(?:extras|train|hparams|data|model|tuner|cli)\b|"
                                r"\bLLaMA[-_]Factory/(?:src/)?\w+\.py\b|\bsrc/train_bash\.py\b|"
                                # its Python API imported by name, and its launch script before 0.6 by name (the
                                # project's earlier names, LLaMA-Efficient-Tuning, used the same script)
                                r"\b(?:from|import)\s+(?:llmtuner|llamafactory)\b|\btrain_bash\.py\b|"
                                # `llamafactory-cli env`, which its issue template asks for: "- `llamafactory` version: 0.9.4"
                                r"`llamafactory` version:", re.I)),
    # ms-swift's argument parsing (swift/llm/base.py, 4.x swift/pipelines/base.py SwiftPipeline._parse_args) raises
    # `ValueError(f'remaining_argv: {remaining_argv}')`; trl's CLI (trl/cli.py) parses with prog "TRL CLI"
    ("ms-swift", ("remaining_argv: [",), False, lazyre.compile(r"\bremaining_argv: \[")),
    # its GRPO trainer's reward lookup (trainers/rlhf_trainer/grpo_trainer.py 3.1-3.6: "reward_function {name} is not
    # implemented in swift.llm.plugin")
    ("ms-swift", ("is not implemented in swift.",), False, lazyre.compile(r"\bis not implemented in swift\.(?:llm\.)?plugin\b")),
    ("trl", ("TRL CLI: error:",), False, lazyre.compile(r"^TRL CLI: error:")),
    ("axolotl", ("axolotl.",), False, lazyre.compile(r"\[axolotl\.|\baxolotl\.cli\.")),
    # torchtune's CLI (torchtune/_cli/tune.py: the subcommands download, ls, cp, run, validate, cat) at the start of a
    # shell line or after a prompt, a backtick or a shell separator, never inside prose ("fine tune run ...")
    ("torchtune", ("tune ",), False, lazyre.compile(r"(?:^\s*(?:\$\s*)?|[`;&|]\s*)tune\s+(?:run|download|cp|ls|validate|cat)"
                                                    r"\s+[\w./-]")),
    # trl's GRPOTrainer where the name stands for trl's: imported from trl, by its module path (a logger's name, an
    # object's repr "<trl.trainer.grpo_trainer.GRPOTrainer object at ...>"), or a method of it in the words CPython's
    # argument errors use ("GRPOTrainer._get_per_token_logps() got an unexpected keyword argument", "... takes 3
    # positional arguments", "... missing 1 required positional argument": Python/ceval.c, the qualified name since 3.10). A code
    # line that calls a class of that name may call the user's own (a notebook's from-scratch GRPOTrainer); trl's code
    # shows in the frames
    # An import from trl in a notebook cell's or script's source line is trl running; trl's other trainers' and
    # configs' methods in CPython's argument-error wording too (trl/trainer/: SFTTrainer, DPOTrainer, KTOTrainer...)
    ("trl", ("trl", "GRPOConfig", "Trainer.", "Config."), False, lazyre.compile(r"(?:^|\s)trl\s+(?:vllm-serve|grpo)\b|\bGRPOConfig\b|"
                       r"\bfrom\s+trl(?:\.[\w.]+)?\s+import\b|^\s*import\s+trl\b|"
                       r"\btrl\.(?:GRPO|SFT|DPO|KTO|ORPO|CPO|PPO|RLOO|Reward|OnlineDPO)(?:Trainer|Config)\(|"
                       r"\btrl\.(?:trainer\.(?:grpo_trainer\.)?)?GRPOTrainer\b|\btrl\.trainer\.grpo_trainer\b|"
                       r"\b(?:GRPO|SFT|DPO|KTO|ORPO|CPO|PPO|RLOO|Reward|OnlineDPO)(?:Trainer|Config)\.\w+\(\) "
                       r"(?:got an unexpected|takes \d|missing \d)")),
    # ms-swift launches with torchrun/swift; a GRPO script under `accelerate launch` runs trl's trainer
    ("trl", ("accelerate",), True, lazyre.compile(r"\baccelerate\s+launch\b.*grpo", re.I)),
    # a warning CPython's warnings module prints from trl's trainer code ("<path>/trl/trainer/ppo_trainer.py:1194:
    # UserWarning: ..."): trl's trainer running
    ("trl", ("trl",), False, lazyre.compile(r"[/\\]trl[/\\]trainer[/\\]\w+\.py:\d+: \w*Warning\b")),
    # classes only trl defines (trl/models/modeling_value_head.py AutoModelForCausalLMWithValueHead and its Seq2Seq
    # sibling, 0.4-0.19; trl/trainer/ppov2_trainer.py PPOv2Trainer, 0.9-0.11): a PPO run on trl's own models
    ("trl", ("WithValueHead", "PPOv2"), False, lazyre.compile(r"\bAutoModelFor(?:CausalLM|Seq2SeqLM)WithValueHead\b|"
                                                            r"\bPPOv2(?:Trainer|Config)\b")),
    # gensyn rl-swarm (hivemind_exp/trainer/hivemind_grpo_trainer.py, genrl-swarm) subclasses trl's GRPOTrainer
    ("trl", ("hivemind_exp", "swarm"), False, lazyre.compile(r"\bhivemind_exp\b|\brl-swarm/|\bgenrl[_-]swarm\b")),
)
# every word _text_marks tests for, in one pattern for the text as it is and one for the text lowered (_CMD's case-blind
# words): a text with none of them (most lines of a run: bars, metric rows, completions) names no framework, told by
# two searches instead of ~25 tests of words (watch asks it of each log line it keeps, at every evaluation: ~20 M
# instructions of a 4-step run's final report, where the 400 first lines of its log are read)
_ANY_WORD = lazyre.compile("|".join(re.escape(w) for w in sorted(
    {*_SWIFT_LOG, "nsloth", *_OPEN_R1, *(w for _, words, blind, _ in _CMD if not blind for w in words)})))
_ANY_BLIND_WORD = lazyre.compile("|".join(re.escape(w) for w in sorted(
    {w for _, words, blind, _ in _CMD if blind for w in words})))
_NO_MARKS: tuple[frozenset[str], bool] = (frozenset(), False)
_WRAPPERS = ("ms-swift", "unsloth", "verifiers", "easyr1", "verl", "openrlhf", "llamafactory", "axolotl", "nemo-rl", "torchtune",
             "xtuner")
# the frameworks that train (a run detected as one of them has a trainer that builds prompts and calls vLLM); the
# others ``detect`` names are runtimes (vllm, deepspeed, transformers, torch)
TRAINERS = frozenset({"trl", *_WRAPPERS})
# the log's own format: a GRPO metric row (its reward keys) printed by transformers' Trainer.log without the keys that
# ms-swift adds to every row it logs (swift/trainers/mixin.py and its progress callback: 'global_step/max_steps',
# 'memory(GiB)', 'train_speed(iter/s)', ms-swift 2.x-4.x): trl's GRPOTrainer or a recipe on it (open-r1, Video-R1)
_GRPO_ROW = lazyre.compile(r"""['"](?:reward_std|rewards/[^'"]+|frac_reward_zero_std)['"]\s*:""")
_SWIFT_ROW = ("global_step/max_steps", "memory(GiB)", "train_speed(")


def _of_path(path: str) -> str | None:
    p = "/" + path.replace("\\", "/").lower()
    for name, signs in _FRAME_SIGNS:
        if any(s in p for s in signs):
            return name
    return None


# the package directories of the libraries a GRPO run goes through, also from a source checkout (pip install -e):
# /workspace/trl/trl/scripts/vllm_serve.py, ~/ms-swift/swift/llm/... are the library, not "your code"
_LIB_DIRS = ("/vllm/", "/torch/", "/transformers/", "/deepspeed/", "/accelerate/", "/peft/", "/megatron/",
             "/flash_attn/", "/triton/", "/ray/", "/datasets/", "/unsloth_compiled_cache/")


def is_library_path(path: str) -> bool:
    """A frame in a framework's or a library's own code (site-packages, a framework package), not the user's."""
    p = "/" + path.replace("\\", "/")
    return ("site-packages/" in p or "dist-packages/" in p or "/lib/python" in p or _of_path(p) is not None
            or p.startswith("/<") or any(d in p for d in _LIB_DIRS))


def issues_of(framework: str | None) -> str:
    """Whose issue tracker to search for a failure no rule knows."""
    return {"trl": "trl", "unsloth": "unsloth", "verifiers": "verifiers", "verl": "verl", "easyr1": "EasyR1", "ms-swift": "ms-swift",
            "openrlhf": "OpenRLHF", "llamafactory": "LLaMA-Factory", "axolotl": "axolotl", "vllm": "vLLM",
            "nemo-rl": "NeMo-RL", "torchtune": "torchtune", "nemo-aligner": "NeMo-Aligner", "xtuner": "xtuner",
            "accelerate": "accelerate", "deepspeed": "DeepSpeed", "torch": "PyTorch",
            "transformers": "transformers"}.get(framework or "", "training framework's")


def from_paths(paths: Iterable[str]) -> tuple[str | None, bool]:
    """The framework the frame paths point to (wrappers over trl win), and whether an open-r1 path was seen."""
    seen: set[str] = set()
    open_r1 = False
    for path in paths:
        name = _of_path(path)
        if name:
            seen.add(name)
        elif _TRL_COPY.search(path):
            seen.add("trl")
        elif "accelerate/commands/launch.py" in path:
            seen.add("accelerate")
        if not open_r1 and any(s in path for s in _OPEN_R1):
            open_r1 = True
    for w in _WRAPPERS:
        if w in seen:
            return w, open_r1
    return ("trl" if "trl" in seen or "accelerate" in seen else None), open_r1


@for_short_texts
def _text_marks(t: str) -> tuple[frozenset[str], bool]:
    """(the frameworks one text names, whether it names open-r1). Cached: watch asks the framework of the same last
    lines at every live evaluation (~0.1 s of a 4-step scoreboard run's CPU in these searches)."""
    if _ANY_WORD.search(t) is None and _ANY_BLIND_WORD.search(t.lower()) is None:
        return _NO_MARKS   # none of the words that every test below needs
    found: set[str] = set()
    if any(s in t for s in _SWIFT_LOG):
        found.add("ms-swift")
    if ("nsloth" in t) and _UNSLOTH_TEXT.search(t):
        found.add("unsloth")
    found.update(_cmd_marks(t))
    return frozenset(found), any(s in t for s in _OPEN_R1)


def _cmd_marks(t: str) -> list[str]:
    """The frameworks of the _CMD patterns that one text matches (each tested after its words)."""
    found = []
    low = None
    for name, words, blind, rx in _CMD:
        seen = t
        if blind:
            low = seen = t.lower() if low is None else low
        if any(w in seen for w in words) and rx.search(t):
            found.append(name)
    return found


def from_text(texts: Iterable[str]) -> tuple[str | None, bool]:
    """The framework that launch commands or log lines name (first match in framework order), open-r1 seen."""
    found: set[str] = set()
    open_r1 = False
    for t in texts:
        names, r1 = _text_marks(t)
        found |= names
        open_r1 = open_r1 or r1
    for w in _WRAPPERS:
        if w in found:
            return w, open_r1
    return ("trl" if "trl" in found or open_r1 else None), open_r1


def row_format(texts: Iterable[str]) -> str | None:
    """Whose metric rows the log prints: "ms-swift" (its own keys in a row), "llamafactory" (the rows of its
    trainer_log.jsonl: LogCallback writes current_steps beside total_steps), "trl" (GRPO rows in transformers' own
    format, none of ms-swift's: ``_GRPO_ROW``), or None (no metric row)."""
    grpo = False
    for t in texts:
        if any(k in t for k in _SWIFT_ROW):
            return "ms-swift"
        if "current_steps" in t and "total_steps" in t:
            return "llamafactory"
        grpo = grpo or ("reward" in t and bool(_GRPO_ROW.search(t)))
    return "trl" if grpo else None


def unsloth_version(texts: Iterable[str]) -> str | None:
    for t in texts:
        if "Unsloth" in t:
            m = _UNSLOTH_VER.search(t)
            if m:
                return m.group(1)
    return None


# no trainer told: the runtime the job ran on (a vLLM server, a DeepSpeed or torch.distributed job), from its frames or
# its launcher's and logger's own lines (vLLM's process prefixes "(EngineCore_0 pid=N)", "(RayWorkerWrapper pid=N)"... and
# entrypoints; DeepSpeed's launcher module and "[deepspeed]" config prints; torch elastic's agent and torchrun)
# transformers' Trainer: its training loop's own files (a job with no trainer framework above it: an SFT or
# classification script on Trainer, DeepSpeed or not); a stack through transformers' models only says nothing
_HF_TRAINER = ("/transformers/trainer.py", "/transformers/trainer_utils.py", "/transformers/trainer_pt_utils.py",
               "/transformers/trainer_callback.py", "/transformers/trainer_seq2seq.py")
_RUNTIME_DIRS = (("transformers", _HF_TRAINER), ("vllm", ("/vllm/",)), ("deepspeed", ("/deepspeed/",)),
                 ("torch", ("/torch/distributed/", "/torch/")))
_RUNTIME_TEXT = (
    # Trainer.train's banner (transformers/trainer.py _inner_training_loop: logger.info("***** Running training *****"))
    # its logger's explicit format ("[INFO|trainer.py:2243] 2024-06-11 10:28:31,457 >> ...",
    # transformers.utils.logging.enable_explicit_format) from the Trainer's own files, and Trainer.log's rows of a run
    # that samples nothing ({'loss': ..., 'epoch': ...}: GRPO rows and ms-swift's are told apart before this)
    ("transformers", lazyre.compile(r"\*{5} Running training \*{5}|"
                                r"\[(?:INFO|WARNING|ERROR)\|(?:trainer|training_args|trainer_utils)\.py:\d+\] |"
                                r"\{'loss': [^{}]*'epoch': ")),
    # vLLM's logger format (vllm/logger.py: "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s", the
    # date as month-day; no brackets before 0.6) and imports of vllm in a pasted cell or script
    ("vllm", lazyre.compile(r"\((?:" + "|".join(VLLM_PROCESSES) + r")\w*(?: rank=\d+)? pid=\d+[,)]|\bvllm\.entrypoints\b|"
                        r"(?:^|\s)vllm serve\b|\b(?:async_)?llm_engine\.py:\d+\]|"
                        r"^(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[?\w+\.py:\d+\] |"
                        r"^\s*(?:import vllm\b|from vllm(?:\.[\w.]+)? import\b)|"
                        # vllm/worker/model_runner_base.py dump_input_when_exception (0.5-0.7)
                        r"Writing input of failed execution to ")),
    # DeepSpeed's checkpoint files (runtime/engine.py: mp_rank_NN_model_states.pt, *_optim_states.pt shards); its
    # logger's lines (deepspeed/utils/logging.py: "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s]",
    # a format other projects copy, so only with the file names of DeepSpeed's own modules that log: the launcher's
    # launch.py / runner.py, accelerator/real_accelerator.py, comm/comm.py, runtime/engine.py, config.py, logging.py,
    # state_dict_factory.py, the ZeRO stages) and its op builder's prints
    ("deepspeed", lazyre.compile(r"\bdeepspeed\.launcher\b|\[deepspeed\]|\bdeepspeed\s+--|\bds_config\b|DeepSpeedEngine|"
                             r"\bmp_rank_\d+_model_states\.pt\b|_zero_pp_rank_\d+_mp_rank_\d+_optim_states\.pt\b|"
                             r"\] \[(?:INFO|WARNING|ERROR|DEBUG)\] \[(?:launch|runner|multinode_runner|real_accelerator|"
                             r"comm|engine|config|logging|state_dict_factory|stage_1_and_2|stage3|partition_parameters|"
                             r"torch|utils)\.py:\d+:\w+\] |Setting ds_accelerator to|Time to load \w+ op: |"
                             # an import of it in a pasted script or cell (its optimizers, ops, the engine)
                             r"^\s*(?:from\s+deepspeed(?:\.[\w.]+)?\s+import\b|import\s+deepspeed\b)")),
    # an import of accelerate in a pasted script (Accelerator, its utils): a job written on accelerate itself. Its
    # launcher alone (`accelerate launch`, `python -m accelerate.commands.launch`) is not read: trl's, transformers',
    # peft's and axolotl's example scripts are launched with it (9 of the 15 development logs where it and nothing else
    # was told ran another library's trainer)
    ("accelerate", lazyre.compile(r"^\s*(?:from\s+accelerate(?:\.[\w.]+)?\s+import\b|import\s+accelerate\b)")),
    ("torch", lazyre.compile(r"\btorch\.distributed\.elastic\b|\btorchrun\b|ProcessGroupNCCL|\bc10d\b")),
)


def runtime_of(paths: Iterable[str], texts: Iterable[str]) -> str | None:
    """The runtime a job without a trainer framework ran on: transformers' Trainer, else vLLM, else DeepSpeed, else
    torch among its frames (a Trainer job's stack goes through DeepSpeed and torch too), else the first whose
    launcher or logger lines appear."""
    seen: set[str] = set()
    for path in paths:
        p = "/" + path.replace("\\", "/")
        seen.update(name for name, dirs in _RUNTIME_DIRS if any(d in p for d in dirs))
    found = next((name for name, _ in _RUNTIME_DIRS if name in seen), None)  # DeepSpeed's calls go through torch
    if found:
        return found
    seen.clear()
    for t in texts:
        for name, rx in _RUNTIME_TEXT:
            if name not in seen and rx.search(t):
                seen.add(name)
    return next((name for name, _ in _RUNTIME_TEXT if name in seen), None)


# the frameworks a paste names in words, most specific first (a wrapper before the library it wraps); an organisation's
# repository name ("unsloth/Llama-3.3-70B-bnb-4bit", "trl-lib/tldr") is not the framework that ran. Measured on the
# 1,072 development logs where neither frames, commands, configuration, versions nor log format told: right for 39 of
# 43 (and for 27 of 27 where only the runtime, torch, DeepSpeed or vLLM, had been told)
# a name's edges are ASCII ones: Chinese prose writes it glued to its words ("刚上手verl框架", "用trl训练"), where \b
# sees no edge (CJK characters are word characters)
_A, _Z = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"
_NAMED: tuple[tuple[str, re.Pattern], ...] = (
    ("ms-swift", lazyre.compile(rf"(?i){_A}ms-swift{_Z}|{_A}modelscope/swift{_Z}")),
    # (a conda env or folder named for it: envs/llama_factory/)
    ("llamafactory", lazyre.compile(r"(?i)llama[-_]?factory|\bllmtuner\b|LLaMA-Efficient-Tuning")),
    ("easyr1", lazyre.compile(rf"(?i){_A}easy[-_ ]?r1(?![A-Za-z0-9_/-])")),
    # (and its repository's discussion named in a link: "github.com/verl-project/verl/pull/1234 should fix it"; not a
    # file of it, such as its Dockerfile, which other runs use too)
    ("verl", lazyre.compile(rf"(?i){_A}verl(?![A-Za-z0-9_/-])|(?:volcengine|verl-project)/verl/(?:pull|issues|commit|discussions)/")),
    ("openrlhf", lazyre.compile(rf"(?i){_A}openrlhf{_Z}")),
    # (unsloth's own entry points name it too: unsloth_train, FastLanguageModel, FastVisionModel)
    ("unsloth", lazyre.compile(rf"(?i){_A}unsloth(?:_[A-Za-z0-9_]+)?(?![A-Za-z0-9_/-])|unslothai/unsloth/(?:pull|issues|commit|discussions)/|(?<![A-Za-z0-9_])Fast(?:Language|Vision)Model(?![A-Za-z0-9_])")),
    ("axolotl", lazyre.compile(rf"(?i){_A}axolotl(?![A-Za-z0-9_/-])")),
    ("xtuner", lazyre.compile(rf"(?i){_A}xtuner(?![A-Za-z0-9_/-])")),
    ("nemo-rl", lazyre.compile(rf"(?i){_A}nemo[-_ ]?rl{_Z}")),
    # (NeMo Framework's user guide documents NeMo-Aligner in its model-alignment section)
    ("nemo-aligner", lazyre.compile(r"(?i)\bnemo[-_ ]?aligner\b|docs\.nvidia\.com/nemo-framework/user-guide/[\w.-]+/"
                                    r"modelalignment/")),
    # (a class named GRPOTrainer alone may be a project's own: trl only by its name, or by the names of trl's other
    # trainers and configs (trl/trainer/: SFTTrainer, DPOTrainer, PPOTrainer, RewardTrainer, ...), which the wrappers
    # that reuse them are named before this line when the paste names them)
    # (its repository in a link, "huggingface/trl/pull/1664", and a path of its package in a sentence or a test
    # runner's frame, "trl/experimental/ppo/ppo_trainer.py:912: in train")
    ("trl", lazyre.compile(rf"(?i){_A}trl(?![A-Za-z0-9_/-])|huggingface/trl/(?:pull|issues|commit|discussions)/|"
                           r"(?<![A-Za-z0-9_./-])trl/(?:trainer|experimental|scripts|models|extras)/[\w/]+\.py|(?-i:(?<![A-Za-z0-9_])(?:SFT|DPO|KTO|ORPO|CPO|PPO|RLOO|Reward|OnlineDPO|GKD|"
                           r"XPO|NashMD|BCO|PRM)(?:Trainer|Config)(?![A-Za-z0-9_]))")),
    # transformers' own Trainer: imported from it, by its module path, or its arguments class built in a code line
    # (transformers/training_args.py TrainingArguments; the wrappers that build it are named before this line)
    ("transformers", lazyre.compile(r"\bfrom\s+transformers\s+import\b[^\n]*\b(?:Seq2Seq)?Train(?:er|ingArguments)\b|"
                                    r"\btransformers\.(?:Seq2Seq)?Train(?:er|ingArguments)\b|\b(?:Seq2Seq)?TrainingArguments\(")),
    # the short name ms-swift's users call it by ("swift可以实现多模态模型的dpo吗", "swift 3.5 GRPO"), read last: every
    # name above is more specific (in 2,032 development logs the word named another framework's run once)
    # (not the Swift language's own tool: `swift build`, `swift package`, `swift test`)
    ("ms-swift", lazyre.compile(r"(?i)(?<![A-Za-z0-9_/.-])swift(?![A-Za-z0-9_/-])"
                                r"(?!\s+(?:build|package|test|repl|format)\b)")),
)


# vLLM named in words by a paste that names no trainer and no training at all: a serving or inference job's failure
# (a vLLM named beside training words is a trainer's rollout engine, whose trainer the paste does not name; DeepSpeed is
# always some trainer's engine: named alone it was right for 18 of 40 development logs, so it is not read)
_VLLM_NAMED = lazyre.compile(r"(?i)(?<![\w/.-])vllm(?![\w/-])")
_TRAINING_WORDS = lazyre.compile(r"(?i)\b(?:grpo|ppo|dpo|kto|orpo|simpo|sft|rlhf|rl|reward|rollouts?|fine-?tun\w*|"
                                 r"train\w*|lora|qlora|deepspeed|zero-?[123]|epochs?|offload|optimizer|gradients?|ref(?:erence)? model)\b|"
                                 r"训练|微调")


def named_in(texts: list[str]) -> str | None:
    """The framework the text names by name, the most specific first, or None."""
    for name, rx in _NAMED:
        if any(rx.search(t) for t in texts):
            return name
    return None


def runtime_named_in(texts: list[str]) -> str | None:
    """"vllm" when the text names vLLM and no training (a serving or inference job), else None."""
    if any(_VLLM_NAMED.search(t) for t in texts) and not any(_TRAINING_WORDS.search(t) for t in texts):
        return "vllm"
    return None


def detect(paths: Iterable[str], texts: list[str], versions: dict[str, str], swift_hint: bool = False,
           implied: dict[str, str] | None = None) -> tuple[str | None, str | None, str | None, str]:
    """(framework, its version or None, recipe or None, source) from frame paths, launch/log texts and printed
    versions; ``source`` says what decided: frames, text (commands, log lines), config, versions, runtime (no trainer
    told: vLLM, DeepSpeed or torch.distributed ran the job), or none.

    ``swift_hint``: the configuration shows ms-swift (its args dump, ``args.json`` with ``swift_version``, a
    ``swift`` command): it counts like a frame in ms-swift's package. ``implied``: framework -> the configuration
    form that implies it (RunConfig.implied: a verl entry point or overrides, OpenRLHF's flags, a trl
    ``GRPOConfig(`` dump, open-r1's script), weighed like the launch commands' text: a wrapper implied wins over trl
    frames, trl implied loses to ms-swift's own configuration (ms-swift's trainer is trl's subclass)."""
    implied = implied or {}
    by_frames, r1_frames = from_paths(paths)
    by_text, r1_text = from_text(texts)
    name, source = by_frames, "frames"
    if name in (None, "trl") and by_text in _WRAPPERS:
        name, source = by_text, "text"  # a trl frame under a wrapper's launch (ms-swift's trainer calls trl's code)
    if name is None and by_text:
        name, source = by_text, "text"
    by_config = next((w for w in _WRAPPERS if w in implied), "trl" if "trl" in implied else None)
    if by_config and (name is None or (name == "trl" and by_config in _WRAPPERS)
                      or (name == "verl" and by_config == "easyr1")):  # the fork's config beside its base's name
        name, source = by_config, "config"
    if name in (None, "trl") and swift_hint:
        name, source = "ms-swift", "config"
    if name is None and "trl" in versions and "ms-swift" not in versions:
        name, source = "trl", "versions"
    if name is None and "ms-swift" in versions:
        name, source = "ms-swift", "versions"
    if name is None:
        by_rows = row_format(texts)
        if by_rows:
            name, source = by_rows, "log format"
    if name is None:
        name = runtime_of(paths, texts)
        source = "runtime" if name else "none"
    if name is None or source == "runtime":
        by_name = named_in(texts)
        if by_name:  # the paste names the framework it ran (a title, a sentence, an environment list)
            name, source = by_name, "named"
    if name is None:
        name = runtime_named_in(texts)  # no trainer and no runtime read from the lines: a runtime named alone
        source = "named" if name else source
    recipe = "open-r1" if (r1_frames or r1_text or "open-r1" in implied) and name == "trl" else None
    version = None
    if name == "ms-swift":
        version = versions.get("ms-swift")
    elif name == "trl":
        version = versions.get("trl")
    elif name == "unsloth":
        version = unsloth_version(texts)
    elif name in ("vllm", "deepspeed", "torch", "transformers", "llamafactory", "accelerate"):
        version = versions.get(name)
    return name, version, recipe, source


def of_run(run, exceptions=(), open_tracebacks=(), tails=None, heads: Iterable[str] = (),
           dumped: Iterable[str] = ()) -> tuple[str | None, str | None, str | None, str]:
    """``detect`` over what a session holds: a RunConfig, the parsed exceptions, the cut tracebacks ((line, frames)
    pairs), the last lines of each log (path -> LogLines), the first lines of the logs when the caller read them and
    the paths of the frames faulthandler dumped (the code a crashed or hung process was running)."""
    paths = [f.path for e in exceptions for f in e.frames]
    paths += [f.path for _, frames in open_tracebacks for f in frames]
    if not paths:  # exceptions pasted without frames: the function the raise-site index finds for their wording
        from ..classify.structure import site_frames, site_package_paths
        paths = [f.path for e in list(exceptions)[:3] for f in site_frames(e)] or \
            [p for e in list(exceptions)[:3] for p in site_package_paths(e)]
    paths += dumped
    texts = list(run.command_texts) + [ln.text for tail in (tails or {}).values() for ln in tail]
    texts += [e.raw for e in list(exceptions)[:20]] + [e.message for e in list(exceptions)[:20]]
    texts += list(heads)
    hint = bool(run.command or run.major or "rlhf_type" in run.args or "swift_version" in run.args)
    return detect(paths, texts, run.versions, hint, getattr(run, "implied", None))


def option(framework: str | None, name: str, values: Iterable[object]) -> str:
    """How a user of ``framework`` sets option ``name``: ``--name 4 or 8`` on the swift command line, the
    ``GRPOConfig`` field for trl and the frameworks built on it (unsloth, open-r1 recipes take the same names)."""
    vals = " or ".join(str(v) for v in values)
    if framework in ("trl", "unsloth"):
        return f"GRPOConfig({name}={vals})"
    return f"--{name} {vals}"
