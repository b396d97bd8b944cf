"""The scoreboard's matrix: each case is a real GRPO run (ms-swift `swift rlhf` or a TRL GRPOTrainer script) with one
fault injected the way users meet it, the class grpo-doctor should name, the verdicts accepted and the regex its
evidence must match. bench/scoreboard.py runs them."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / "scoreboard_plugins" / "faults.py"
TRL_SCRIPT = HERE / "scoreboard_plugins" / "trl_grpo.py"

# watch's settings for every case: hangs are caught in seconds, not the default minutes (a tiny model's step is
# ~0.2-3 s; the real defaults, 5 x the slowest step and at least 300 s, would only make the bench slow; at 10 s
# the healthy runs were stopped while swift plotted its curves with matplotlib after the last step)
HANG_TIMEOUT = 30.0
FIRST_STEP_TIMEOUT = 20.0
GRACE = 2.0
DRAIN = 2.0

# the rows the seed-42 samplers give the third step (1 prompt a step): ms-swift's and trl's RepeatSampler differ
SWIFT_STEP3_ROW = 27
TRL_STEP3_ROW = 18
# imports of ms-swift or trl take 2.0-2.6 GB of address space on this stack; the wide model's load needs 1.5 GB more
LOAD_LIMIT_AS = 3_000_000_000

MT = ["--model_type", "qwen2", "--template", "qwen2_5"]
BASE = ["rlhf", "--rlhf_type", "grpo", "--model", "{TINY}", *MT, "--check_model", "false",
        "--dataset", "data/train.jsonl", "--tuner_type", "lora", "--torch_dtype", "float32",
        "--max_completion_length", "8", "--num_generations", "4", "--per_device_train_batch_size", "4",
        "--max_steps", "4", "--save_steps", "2", "--logging_steps", "1", "--dataloader_num_workers", "0",
        # no tensorboard: swift then skips drawing its curves with matplotlib after the last step (10-20 s of CPU
        # per run on 2 shared cores); logging.jsonl is written all the same
        "--report_to", "none"]
PLUG = ["--external_plugins", str(PLUGIN)]


def argv_with(base: list[str], **flags: str | None) -> list[str]:
    """``base`` with ``--flag value`` set (replaced when present) or removed (value None)."""
    out = list(base)
    for name, val in flags.items():
        flag = "--" + name
        if flag in out:
            i = out.index(flag)
            j = i + 1
            while j < len(out) and not out[j].startswith("--"):
                j += 1
            out[i:j] = [] if val is None else [flag, *val.split()]
        elif val is not None:
            out += [flag, *val.split()]
    return out


def noisy(**flags: str | None) -> list[str]:
    return argv_with([*BASE, *PLUG], **{"reward_funcs": "sb_noisy", **flags})


@dataclass(frozen=True)
class Case:
    name: str
    cls: str                          # the fault class = the expected category; "healthy" for a healthy run
    argv: tuple[str, ...]             # after `swift`; {TINY} {MERGED} {WORK} filled in; --output_dir added
    verdicts: tuple[str, ...] = ()    # accepted `action` of findings[0] (the first is the expected one)
    evidence: str = ""                # regex one of findings[0]'s evidence texts must match
    description: str = ""
    framework: str = "ms-swift"
    quick: bool = False               # the --quick representative of its class
    env: tuple[tuple[str, str], ...] = ()
    needs: tuple[str, ...] = ()       # "merged": the LoRA SFT base merged (swiftgen), "root": mount a tmpfs
    hang: bool = False                # watch must stop it; time fault -> stop
    tmpfs_kb: int = 0                 # --output_dir on a tmpfs of this size (disk full)
    limit_as: int = 0                 # RLIMIT_AS (bytes) of watch and the run below it, as `ulimit -v` in a job script


CASES: list[Case] = [
    # ---- healthy runs (no finding at error allowed)
    Case("healthy-lora", "healthy", tuple(noisy()), description="LoRA GRPO, 4 steps, a reward that varies in each group",
         quick=True),
    Case("healthy-full-fp32", "healthy", tuple(noisy(tuner_type="full", learning_rate="1e-5")),
         description="full-parameter GRPO in fp32, 4 steps"),
    Case("healthy-ddp2", "healthy", tuple(noisy(per_device_train_batch_size="2", use_cpu="true", ddp_backend="gloo")),
         description="2 processes (torchrun, gloo, --use_cpu true), 2 x 2 completions = one group of 4",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29621"))),
    # ---- batch-divisibility: GRPOTrainer / swift's argument check raises `must be evenly divisible`
    Case("batch-div-train", "batch-divisibility", tuple(noisy(num_generations="2", per_device_train_batch_size="3")),
         ("relaunch",), r"evenly divisible", "per_device_train_batch_size 3, num_generations 2", quick=True),
    Case("batch-div-ddp2", "batch-divisibility",
         tuple(noisy(per_device_train_batch_size="3", use_cpu="true", ddp_backend="gloo")),
         ("relaunch",), r"evenly divisible", "2 processes x 3 = 6 completions, num_generations 4",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29623"))),
    # ---- eval-batch-divisibility
    Case("eval-batch-default", "eval-batch-divisibility", tuple(noisy(val_dataset="data/val.jsonl")),
         ("relaunch",), r"eval batch size.*evenly divisible|evenly divisible.*num_generations_eval",
         "--val_dataset with per_device_eval_batch_size left at 1, num_generations 4", quick=True),
    Case("eval-batch-3", "eval-batch-divisibility",
         tuple(noisy(val_dataset="data/val.jsonl", num_generations="2", per_device_eval_batch_size="3")),
         ("relaunch",), r"eval batch size.*evenly divisible",
         "per_device_eval_batch_size 3 with num_generations 2"),
    # ---- argument-error-other
    Case("unknown-flag", "argument-error-other", tuple(noisy(reward_temperature="0.5")), ("relaunch",),
         r"remaining_argv", "a made-up flag --reward_temperature", quick=True),
    Case("bf16-on-cpu", "argument-error-other", tuple(noisy(torch_dtype="bfloat16")), ("relaunch",),
         r"doesn't support bf16", "--torch_dtype bfloat16 without --use_cpu on a machine without a GPU"),
    # ---- dataset-or-template-error
    Case("no-template", "dataset-or-template-error", tuple(noisy(template=None)), ("relaunch",),
         r"template_type", "a local model directory without --template: several templates match", quick=True),
    Case("no-model-type", "dataset-or-template-error", tuple(noisy(model_type=None)), ("relaunch",),
         r"model_type", "a local model directory without --model_type: two model types match"),
    # ---- import-or-dependency-error
    Case("plugin-missing-module", "import-or-dependency-error",
         tuple(argv_with(noisy(), external_plugins=str(PLUGIN) + " {WORK}/plugins/needs_judge_client.py")),
         ("relaunch",), r"No module named", "an --external_plugins file imports a module that is not installed",
         quick=True),
    # ---- reward-function-error
    Case("reward-raises", "reward-function-error", tuple(noisy(reward_funcs="sb_raising")), ("stop", "relaunch"),
         r"judge_score: cannot score", "a user reward function raises ValueError at its first call", quick=True),
    Case("accuracy-no-solution-column", "reward-function-error",
         tuple(argv_with([*BASE], dataset="data/no_solution.jsonl", reward_funcs="accuracy")), ("stop", "relaunch"),
         r"solution", "--reward_funcs accuracy on a dataset without a `solution` column"),
    # ---- reward-zero-or-flat
    Case("reward-constant", "reward-zero-or-flat", tuple(noisy(reward_funcs="sb_constant")), ("stop",),
         r"reward_std", "a reward that gives every completion the same score: reward_std 0 at every step", quick=True),
    Case("reward-nan-swallowed", "reward-zero-or-flat", tuple(noisy(reward_funcs="sb_nan", max_steps="6")), ("stop",),
         r"reward", "a reward returning NaN: swift's nansum turns it into reward 0, reward_std 0"),
    Case("random-init-accuracy-format", "reward-zero-or-flat",
         tuple(argv_with([*BASE], reward_funcs="accuracy format", max_steps="6")), ("stop",),
         r"reward", "a random-init model never writes the format: accuracy and format score 0 everywhere"),
    # ---- loss-nan-or-inf
    Case("diverged-lr", "loss-nan-or-inf",
         tuple(noisy(tuner_type="full", learning_rate="1e4", max_grad_norm="1e9", save_steps="4")), ("relaunch",),
         r"nan", "learning_rate 1e4 without clipping: the model diverges, grad_norm nan at step 4", quick=True),
    # ---- hangs (watch stops them)
    Case("hang-reward-mid", "hang-mid-training", tuple(noisy(reward_funcs="sb_stuck")),
         ("stop",), r"", "the reward function never returns from its 3rd call (step 3)",
         env=(("SCOREBOARD_OK_CALLS", "2"),), hang=True),
    Case("hang-reward-first", "hang-at-start", tuple(noisy(reward_funcs="sb_stuck")), ("stop",), r"",
         "the reward function never returns from its first call: no training step ever ends", quick=True,
         env=(("SCOREBOARD_OK_CALLS", "0"),), hang=True),
    # ---- checkpoints
    Case("full-from-merged-load-args", "checkpoint-adapter-only-load-args",
         tuple(noisy(model="{MERGED}", tuner_type="full", load_args="true")), ("relaunch",), r"adapter|lora",
         "--model <merged LoRA dir> --tuner_type full --load_args true: the LoRA run's tuner_type wins",
         needs=("merged",)),
    # ---- more reward-function faults and argument checks
    Case("reward-short", "reward-function-error", tuple(noisy(reward_funcs="sb_short")), ("stop", "relaunch"),
         r"", "a reward that returns one score fewer than completions (drops the ones it cannot parse)"),
    Case("reward-returns-none", "reward-function-error", tuple(noisy(reward_funcs="sb_none")), ("stop", "relaunch"),
         r"None", "a reward function that forgot its return statement: it returns None instead of scores"),
    Case("num-generations-1", "batch-divisibility", tuple(noisy(num_generations="1", per_device_train_batch_size="1")),
         ("relaunch",), r"num_generations", "--num_generations 1: GRPO needs at least 2 completions per prompt"),
    # ---- a rank killed with SIGKILL (what the OOM killer sends); one rank that stalls before a collective: the other
    # waits in it, and watch stops the run before any process-group timeout (stacks of both ranks)
    Case("rank-sigkill-ddp2", "host-oom-killed",
         tuple(noisy(reward_funcs="sb_killed", per_device_train_batch_size="2", use_cpu="true", ddp_backend="gloo")),
         ("relaunch", "resume"), r"SIGKILL|Signal 9|-9", "rank 1 gets SIGKILL in its 3rd reward call (2 processes)",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29625"), ("SCOREBOARD_OK_CALLS", "2"),
                          ("SCOREBOARD_RANK", "1"))),
    Case("rank-stall-ddp2", "hang-mid-training",
         tuple(noisy(reward_funcs="sb_rank_stall", per_device_train_batch_size="2", use_cpu="true",
                     ddp_backend="gloo")),
         ("stop",), r"", "rank 1's reward never returns from its 3rd call; rank 0 waits in the next collective",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29627"), ("SCOREBOARD_OK_CALLS", "2"),
              ("SCOREBOARD_RANK", "1")), hang=True),
    # ---- output-degenerate: every completion cut at --max_completion_length
    Case("clipped-completions", "output-degenerate",
         tuple(noisy(model="{MERGED}", max_completion_length="3", max_steps="6")),
         ("relaunch",), r"clipped_ratio", "--max_completion_length 3 for a policy that writes 13-token answers",
         needs=("merged",)),
    # ---- nccl-timeout: a 2-node launch whose second node never comes up: node 0's torchrun waits in the static
    # rendezvous until the store's timeout (600 s by default; PET_RDZV_CONF, torchrun's --rdzv-conf read from the
    # environment, makes it 15 s here). A rank stalled before a collective cannot be timed out on CPU: with
    # --use_cpu transformers (5.19 training_args.py) does not pass --ddp_timeout to the process group, whose gloo
    # timeout stays at 30 min (rank-stall-ddp2 is that fault, stopped by watch as a hang)
    Case("node-missing-rdzv-timeout", "hang-at-start",
         tuple(noisy(per_device_train_batch_size="2", use_cpu="true", ddp_backend="gloo")),
         ("restart", "relaunch"), r"Timed out after \d+ seconds waiting for clients",
         "NNODES=2 on one node only: the rendezvous waits for the second node until its timeout",
         env=(("NNODES", "2"), ("NODE_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"), ("NPROC_PER_NODE", "1"),
              ("MASTER_PORT", "29631"), ("PET_RDZV_CONF", "timeout=15"))),
    # ---- slow-training: a judge that slows down call after call; no step is long enough to be a hang
    Case("slow-reward", "slow-training",
         tuple(noisy(model="{MERGED}", reward_funcs="sb_slowing", max_steps="10", save_steps="10",
                     max_completion_length="16")),
         ("relaunch", "restart"), r"step_time",
         "the reward waits 2 s longer at each call after the 3rd (at most 8 s): s/it grows from ~1 s to ~9 s",
         needs=("merged",), env=(("SCOREBOARD_OK_CALLS", "3"), ("SCOREBOARD_SLOW_STEP_S", "2"),
                                 ("SCOREBOARD_SLOW_MAX_S", "8"))),
    # ---- checkpoint-corrupt: resume from a checkpoint whose weights file was cut short (a save killed mid-write)
    Case("resume-truncated-ckpt", "checkpoint-corrupt", tuple(noisy(resume_from_checkpoint="{DAMAGED}")),
         ("resume", "relaunch"), r"safetensors|deserializ|header|incomplete",
         "--resume_from_checkpoint of a LoRA checkpoint whose adapter_model.safetensors lost its second half",
         needs=("damaged",)),
    # ---- resume from the wrong kind of checkpoint: a LoRA checkpoint in a full-parameter run (the trainer looks for
    # full weights there), the class of GD439
    Case("resume-lora-ckpt-in-full-run", "dataset-or-template-error",
         tuple(noisy(tuner_type="full", resume_from_checkpoint="{LORA}")), ("relaunch",), r"checkpoint index",
         "--tuner_type full --resume_from_checkpoint <a LoRA SFT checkpoint>", needs=("merged",)),
    # ---- checkpoint-bloat: --load_args true from a full SFT checkpoint: its tuner_type full wins over --tuner_type lora
    Case("lora-from-full-load-args", "checkpoint-bloat",
         tuple(noisy(model="{BASE}", tuner_type="lora", load_args="true")), ("relaunch",),
         r"model\.safetensors|full",
         "--model <full SFT checkpoint> --tuner_type lora --load_args true: full weights saved, not an adapter",
         needs=("base",)),
    # ---- multimodal-image-error: image paths relative to a folder the run does not start in (ROOT_IMAGE_DIR unset);
    # the template loads every row's images, even a text model's (swift/template/base.py _preprocess_inputs)
    Case("dataset-images-missing", "multimodal-image-error", tuple(noisy(dataset="data/with_images.jsonl")),
         ("stop", "relaunch"), r"images/q\d+\.png|No such file",
         "the dataset's `images` paths are relative to a folder that is not the working directory"),
    # ---- every row filtered out
    Case("empty-after-filter", "dataset-or-template-error",
         tuple(noisy(max_length="4", truncation_strategy="delete")), ("relaunch",), r"",
         "--max_length 4 --truncation_strategy delete: every row is longer, the dataset is empty"),
    Case("disk-full-tmpfs", "disk-full", tuple(noisy(tuner_type="full", save_steps="2")),
         ("resume", "restart", "relaunch"), r"No space left on device",
         "--output_dir on a 256 KB tmpfs: the first checkpoint save fails", needs=("root",), tmpfs_kb=256),
    # ---- a dataset row that the template cannot encode: ms-swift's template pairs the messages after the first
    # system one as (user|tool, assistant) and asserts it (swift/template/base.py _swift_encode); a row with its
    # system message after the question passes the dataset checks (every role is a known one) and fails when the
    # trainer first encodes it, at step 3 (the row the seed-42 sampler gives step 3)
    Case("bad-row-system-last", "dataset-or-template-error", tuple(noisy(dataset="data/system_last_row.jsonl")),
         ("stop", "relaunch", "resume"), r"response_role|query_role",
         f"row {SWIFT_STEP3_ROW + 1} of the dataset has its system message after the user's: the template fails at "
         "step 3"),
    # ---- the whole run gets SIGTERM (a scheduler's time limit, a preemption) while checkpoint-4's optimizer.pt is
    # half written (bench/scoreboard_plugins/midsave.py); checkpoint-2 is complete
    Case("sigterm-mid-save", "checkpoint-corrupt", tuple(noisy(max_steps="6")), ("resume", "relaunch"),
         r"checkpoint-4|optimizer\.pt|SIGTERM",
         "SIGTERM to the run's process group while checkpoint-4/optimizer.pt is half written", quick=True,
         env=(("SCOREBOARD_SIGTERM_IN_SAVE", "checkpoint-4/optimizer.pt"),)),
    # ---- host memory: an address-space limit (`ulimit -v`, Grid Engine's h_vmem) that the imports fit in and the
    # load of a 240M-parameter model does not: the mmap of its weights file fails with ENOMEM
    Case("load-address-space-limit", "host-oom-killed", tuple(noisy(model="{WIDE}")), ("relaunch",),
         r"Cannot allocate memory|can't allocate memory|MemoryError",
         "a 3 GB address-space limit (ulimit -v) on the run: loading a 240M-parameter model fails",
         needs=("wide",), limit_as=LOAD_LIMIT_AS),
]


def trl(**flags: str) -> tuple[str, ...]:
    """A TRL GRPOTrainer run (bench/scoreboard_plugins/trl_grpo.py) of the same tiny model and data."""
    return tuple(argv_with(["--model", "{TINY}", "--dataset", "data/train.jsonl", "--reward", "noisy"], **flags))


CASES += [
    Case("trl-healthy", "healthy", trl(), description="TRL GRPOTrainer, 4 steps, a reward that varies", framework="trl"),
    Case("trl-healthy-6-steps", "healthy", trl(max_steps="6", learning_rate="1e-6"),
         description="TRL GRPOTrainer, 6 steps at learning_rate 1e-6", framework="trl"),
    Case("trl-healthy-slow-first-step", "healthy", trl(reward="slow_first"),
         description="TRL GRPOTrainer whose first reward call takes 12 s (a cold judge): a slow first step, no hang",
         framework="trl"),
    Case("trl-batch-div", "batch-divisibility", trl(per_device_train_batch_size="3", num_generations="2"),
         ("relaunch",), r"divisible", "GRPOConfig per_device_train_batch_size 3, num_generations 2", framework="trl"),
    Case("trl-missing-module", "import-or-dependency-error", trl(**{"import": "judge_client"}), ("relaunch",),
         r"No module named", "the training script imports a module that is not installed", framework="trl"),
    Case("trl-reward-raises", "reward-function-error", trl(reward="raising"), ("stop", "relaunch"),
         r"judge_score: cannot score", "the reward function raises ValueError at its first call", framework="trl"),
    Case("trl-reward-constant", "reward-zero-or-flat", trl(reward="constant", max_steps="6"), ("stop",),
         r"reward", "every completion gets the same reward: reward_std 0 at every step", framework="trl"),
    # the same fault as diverged-lr, but trl's run never reaches NaN (10 steps tried): one step saturates the tiny
    # model and every later gradient is exactly 0, so the class is what the run shows; resuming from a checkpoint
    # saved after that step would keep the dead weights, hence relaunch
    Case("trl-diverged-lr", "grad-norm-zero", trl(learning_rate="1e4", max_grad_norm="1e9"), ("relaunch",),
         r"grad_norm", "learning_rate 1e4 without clipping: grad_norm 2.1 at step 1, exactly 0 from step 2",
         framework="trl"),
    Case("trl-reward-short", "reward-function-error", trl(reward="short"), ("stop", "relaunch"), r"",
         "the reward function returns one score fewer than completions", framework="trl"),
    Case("trl-reward-returns-none", "reward-function-error", trl(reward="none"), ("stop", "relaunch"), r"None",
         "the reward function forgot its return statement: it returns None", framework="trl"),
    Case("trl-sigkill", "host-oom-killed", trl(reward="killed", ok_calls="2"), ("relaunch", "resume"),
         r"SIGKILL|Signal 9|-9|137", "the training process gets SIGKILL in its 3rd reward call", framework="trl"),
    Case("trl-resume-truncated-ckpt", "checkpoint-corrupt", trl(resume_from_checkpoint="{TRL_DAMAGED}"),
         ("resume", "relaunch"), r"central directory|zip archive|optimizer",
         "resume_from_checkpoint of a checkpoint whose optimizer.pt lost its second half (a save killed mid-write)",
         framework="trl", needs=("trl-damaged",)),
    Case("trl-bf16-on-cpu", "argument-error-other", trl(bf16=""), ("relaunch",), r"bf16",
         "GRPOConfig(bf16=True) on a machine without a GPU", framework="trl"),
    Case("trl-messages-not-prompt", "dataset-or-template-error", trl(raw_columns=""), ("relaunch",), r"prompt",
         "the dataset's conversation column is `messages`; GRPOTrainer reads `prompt`", framework="trl"),
    Case("trl-hang-reward-first", "hang-at-start", trl(reward="stuck", ok_calls="0"), ("stop",), r"",
         "the reward function never returns from its first call", framework="trl", hang=True),
    Case("trl-hang-reward-mid", "hang-mid-training", trl(reward="stuck", ok_calls="2", max_steps="6"), ("stop",), r"",
         "the reward function never returns from its 3rd call", framework="trl", hang=True),
    # a null content: the chat template concatenates strings (jinja's `+`), so None raises TypeError when GRPOTrainer
    # tokenizes that row's prompt (at step 3)
    Case("trl-null-content-row", "dataset-or-template-error", trl(dataset="data/null_content_row.jsonl"),
         ("stop", "relaunch", "resume"), r"NoneType|concatenate",
         f"row {TRL_STEP3_ROW + 1} of the dataset has a null user content: the chat template fails at step 3",
         framework="trl"),
    Case("trl-sigterm-mid-save", "checkpoint-corrupt", trl(max_steps="6"), ("resume", "relaunch"),
         r"checkpoint-4|optimizer\.pt|SIGTERM",
         "SIGTERM to the run's process group while checkpoint-4/optimizer.pt is half written", framework="trl",
         env=(("SCOREBOARD_SIGTERM_IN_SAVE", "checkpoint-4/optimizer.pt"),)),
    # ---- nccl-timeout: 2 gloo ranks under torchrun, the process group set up by the script with a 20 s timeout (with
    # --use_cpu transformers passes no ddp_timeout to it); rank 1's reward never returns from its 3rd call, rank 0
    # waits in the gather of the rewards until gloo's own timeout raises and ends the run. watch's hang timeout (30 s)
    # is longer than the group's, as a user's 30-minute one would be. GD301's restart becomes a resume from
    # checkpoint-2, complete before the stall (doctor/verdict.py)
    Case("trl-gloo-timeout-ddp2", "nccl-timeout",
         trl(reward="rank_stall", ok_calls="2", per_device_train_batch_size="2", pg_timeout_s="20"),
         ("resume", "restart"), r"Timed out waiting \d+ms for (?:send|recv)",
         "2 gloo ranks, process group timeout 20 s: rank 1's reward stalls at its 3rd call, rank 0's collective "
         "times out", framework="trl",
         env=(("NPROC_PER_NODE", "2"), ("MASTER_PORT", "29633"), ("SCOREBOARD_RANK", "1"))),
    Case("trl-load-address-space-limit", "host-oom-killed", trl(model="{WIDE}"), ("relaunch",),
         r"Cannot allocate memory|can't allocate memory|MemoryError",
         "a 3 GB address-space limit (ulimit -v) on the run: loading a 240M-parameter model fails", framework="trl",
         needs=("wide",), limit_as=LOAD_LIMIT_AS),
]
BY_NAME = {c.name: c for c in CASES}

MISSING_MODULE_PLUGIN = '''\
# An --external_plugins file that needs a client library this environment does not have.
import judge_client  # noqa: F401  (not installed)
'''

def image_rows(train: Path) -> str:
    """The tiny math rows, each with an `<image>` tag and a relative image path (images/qN.png) that is not there."""
    out = []
    for i, line in enumerate(train.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        row["messages"][0]["content"] = "<image>" + row["messages"][0]["content"]
        row["images"] = [f"images/q{i}.png"]
        out.append(json.dumps(row) + "\n")
    return "".join(out)



def system_last_rows(train: Path, row: int) -> str:
    """The tiny math rows, row ``row`` with a system message after its user message (as a row built by appending a
    system prompt to an existing conversation would be)."""
    out = []
    for i, line in enumerate(train.read_text(encoding="utf-8").splitlines()):
        r = json.loads(line)
        if i == row:
            r["messages"].append({"role": "system", "content": "Answer as <think>...</think><answer>...</answer>."})
        out.append(json.dumps(r) + "\n")
    return "".join(out)


def null_content_rows(train: Path, row: int) -> str:
    """The tiny math rows, row ``row`` with a null user content (a question lost in an export)."""
    out = []
    for i, line in enumerate(train.read_text(encoding="utf-8").splitlines()):
        r = json.loads(line)
        if i == row:
            r["messages"][0]["content"] = None
        out.append(json.dumps(r) + "\n")
    return "".join(out)
