"""Argument, GPU-layout, dataset/template and multimodal checks (rules GD401-GD449).

Every fixer turns one of ms-swift's argument-time messages (swift-notes §1.2-§1.6) into a fix that
names this run's flags and numbers, for the ms-swift version the log shows. Wordings and the
versions they belong to come from swift-notes.md; nothing here is guessed from one user's log.
"""
from __future__ import annotations

import ast
import difflib
import re
from typing import Any

from ..model import EXCEPTION, LINE, ExceptionInfo, Finding, LogLine, Severity
from ..rules import FinishContext, Hit, Rule, evidence_of
from ..sources.swiftconfig import RunConfig, group_flags
from ..swift.batch import divisors, nearest
from .swift_fields import RLHF_FIELDS_4_6

# --------------------------------------------------------------------------- version helpers


def version_label(run: RunConfig) -> str:
    if run.swift_version:
        return f"ms-swift {run.swift_version}"
    if run.major:
        return f"ms-swift {run.major}.x"
    return "ms-swift"


def at_least(run: RunConfig, major: int, minor: int = 0) -> bool | None:
    """Is the run's ms-swift at least major.minor? None when unknown (only the major hint may help)."""
    mm = run.swift_major_minor
    if mm is not None:
        return mm >= (major, minor)
    if run.major is not None:
        if run.major > major:
            return True
        if run.major < major:
            return False
    return None


def _int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def nproc_per_node(run: RunConfig) -> int | None:
    v = run.env.get("NPROC_PER_NODE")
    n = _int(v)
    if n:
        return n
    return _int(run.torchrun.get("nproc_per_node"))


def tuner_flag(run: RunConfig) -> str:
    """The tuner flag name that exists in this version."""
    new = at_least(run, 4, 0)
    if new is False:
        return "train_type"
    if new is None and "train_type" in run.args and "tuner_type" not in run.args:
        return "train_type"
    return "tuner_type"


# --------------------------------------------------------------------------- GD401 remaining_argv

# old name -> (new name, why). swift-notes §1.2, §1.6, §7.
RENAMED = {
    "train_type": ("tuner_type", "ms-swift 4.0 renamed --train_type to --tuner_type; 4.0.x still accepted the old "
                                 "name with a deprecation warning, 4.1 removed it"),
    "gpu_memory_utilization": ("vllm_gpu_memory_utilization", "renamed to the vllm_* name in 3.7; the old name was "
                                                              "accepted until 3.9 and removed in 3.10"),
    "tensor_parallel_size": ("vllm_tensor_parallel_size", "renamed to the vllm_* name (3.5/3.7); the old name was "
                                                          "removed in 3.10"),
    "limit_mm_per_prompt": ("vllm_limit_mm_per_prompt", "renamed to the vllm_* name in 3.7; the old name was removed "
                                                        "in 3.10"),
    "data_parallel_size": ("vllm_data_parallel_size", "renamed to the vllm_* name in 3.7; the old name was removed "
                                                      "in 3.10"),
    "use_async_engine": ("vllm_use_async_engine", "renamed to the vllm_* name in 3.7; the old name was removed in "
                                                  "3.10"),
    "multi_turn_func": ("multi_turn_scheduler", "removed in 3.10; multi-turn rollouts are configured with "
                                                "--multi_turn_scheduler (3.6+)"),
}
# flags that disappeared without a one-to-one successor
REMOVED = {
    "vllm_device": "removed in ms-swift 3.6 (deprecated in 3.5): vLLM no longer gets a GPU by index",
    "num_infer_workers": "removed in ms-swift 3.6 (deprecated in 3.5) together with the 3.2-3.4 async GPU split",
    "gc_collect_after_offload": "removed in ms-swift 3.10; drop it",
    "lmdeploy_device": "removed with the LMDeploy rollout backend; use vLLM (--use_vllm true --vllm_mode ...)",
    "use_lmdeploy": "removed with the LMDeploy rollout backend; use vLLM (--use_vllm true --vllm_mode ...)",
}
# flags that only newer versions know: (first version, note)
ADDED = {
    "tuner_type": ((4, 0), "--tuner_type is the ms-swift 4.x name; 3.x calls it --train_type"),
    "vllm_mode": ((3, 5), "--vllm_mode exists from ms-swift 3.5"),
    "vllm_server_host": ((3, 4), "server mode (--vllm_server_host) exists from ms-swift 3.4"),
    "steps_per_generation": ((3, 5), "--steps_per_generation exists from ms-swift 3.5"),
    "generation_batch_size": ((3, 5), "--generation_batch_size exists from ms-swift 3.5"),
    "num_generations_eval": ((3, 12), "--num_generations_eval exists from ms-swift 3.12"),
    "advantage_estimator": ((3, 10), "--advantage_estimator exists from ms-swift 3.10"),
    "vllm_enable_lora": ((3, 10), "--vllm_enable_lora exists from ms-swift 3.10"),
    "teacher_model": ((4, 4), "--teacher_model for GRPO (on-policy distillation) exists from ms-swift 4.4"),
    "safe_serialization": ((4, 0), "--safe_serialization is read by ms-swift from 4.0.1; 3.x uses "
                                   "--save_safetensors"),
}


def split_argv(text: str) -> list[str]:
    try:
        v = ast.literal_eval("[" + text + "]")
        if isinstance(v, list):
            return [str(x) for x in v]
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    return [a or b for a, b in re.findall(r"'([^']*)'|\"([^\"]*)\"", text)]


def _shown(name: str, vals: list[str]) -> str:
    flag = name if name.startswith("-") else f"--{name}"
    return " ".join([flag] + [v if v and " " not in v else repr(v) for v in vals])


def flag_advice(name: str, vals: list[str], run: RunConfig) -> str:
    key = name.lstrip("-").replace("-", "_")
    shown = _shown(name, vals)
    val = " ".join(vals)
    ver = version_label(run)
    if key == "config":
        return (f"Drop `{shown}`: ms-swift has no --config flag; it reads a YAML/JSON config given as the first "
                f"argument: `swift rlhf {val or 'config.yaml'} --other_flag ...` (flags after it override the file).")
    if key in RENAMED:
        new, why = RENAMED[key]
        return f"Replace `{shown}` with `--{new}{' ' + val if val else ''}` ({why})."
    if key in REMOVED:
        why = REMOVED[key]
        if key in ("vllm_device", "num_infer_workers"):
            n = nproc_per_node(run)
            vis = run.visible_gpus()
            nproc = f"NPROC_PER_NODE={vis}" if vis else "NPROC_PER_NODE = the number of visible GPUs"
            layout = f" ({vis} GPUs visible, NPROC_PER_NODE {n})" if vis and n else ""
            return (f"Drop `{shown}`: {why}. Choose a rollout mode instead{layout}: --use_vllm true --vllm_mode colocate "
                    f"(vLLM shares the training GPUs: {nproc}), or --vllm_mode server with a separate `swift rollout` "
                    f"on GPUs of its own (--vllm_server_host/--vllm_server_port).")
        return f"Drop `{shown}`: {why}."
    if key in ADDED:
        since, note = ADDED[key]
        ok = at_least(run, *since)
        if ok is not True:
            if key == "tuner_type":
                return f"Replace `{shown}` with `--train_type{' ' + val if val else ''}` ({note})."
            return (f"`{shown}`: {note}, and the ms-swift installed here is older. Upgrade "
                    f"(pip install -U 'ms-swift>={since[0]}.{since[1]}') or drop the flag.")
    if key in RLHF_FIELDS_4_6:
        return (f"`{shown}` is an argument of ms-swift 4.6 but not of the version installed here ({ver}): upgrade "
                f"ms-swift or drop the flag.")
    close = difflib.get_close_matches(key, RLHF_FIELDS_4_6, n=2, cutoff=0.75)
    if close:
        alts = " or ".join(f"--{c}" for c in close)
        return f"`{shown}` is not an argument of swift rlhf: did you mean {alts}?"
    return (f"`{shown}` is not an argument of swift rlhf ({ver}): check its spelling against the ms-swift "
            f"Command-line-parameters page for your version, or drop it.")


def remaining_argv_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    tokens = split_argv(hits[0].groups.get("argv") or "")
    flags, stray = group_flags(tokens, short=True)
    names = ", ".join(_shown(n, []) for n, _ in flags) or ", ".join(repr(s) for s in stray) or "(empty list)"
    if hits[0].groups.get("hf") and run.command is None:
        # a trl / transformers script (HfArgumentParser without ms-swift): ms-swift's flag history does not apply
        fix = []
        for n, v in flags:
            key = n.lstrip("-").replace("-", "_")
            close = difflib.get_close_matches(key, RLHF_FIELDS_4_6, n=2, cutoff=0.75)
            if key == "vllm_device":
                fix.append(f"Drop `{_shown(n, v)}`: newer trl releases run vLLM either colocated (--vllm_mode "
                           f"colocate) or as a `trl vllm-serve` server (--vllm_mode server); see the GRPOConfig docs "
                           f"of the installed trl.")
            elif close and key not in close:
                fix.append(f"`{_shown(n, v)}` is not an argument of this script: did you mean "
                           f"{' or '.join('--' + c for c in close)}?")
            else:
                fix.append(f"`{_shown(n, v)}` is not an argument of the installed script/trl version: check its "
                           f"spelling and the GRPOConfig of the installed trl (pip show trl), or drop it.")
        return {"message": f"The argument parser does not know {names}: none of the script's argument classes "
                           f"(GRPOConfig, ModelConfig, script arguments) has these fields in the installed version.",
                "fix": fix or ["Remove the arguments listed."]}
    msg = (f"{version_label(run)} does not know {names}: the parser hands back what no argument class accepted "
           f"(`remaining_argv`) and the run stops before loading the model (an almost empty output dir is left "
           f"behind).")
    fix = [flag_advice(n, v, run) for n, v in flags]
    if stray:
        fix.append(f"{', '.join(repr(s) for s in stray)} came without a flag: a value with spaces that is not "
                   f"quoted, or a broken line continuation (a `\\` missing at a line end, or a `# comment` line "
                   f"inside a multi-line command) separated it from its flag.")
    if not fix:
        fix = ["Remove the arguments listed in remaining_argv."]
    return {"message": msg, "fix": fix}


# --------------------------------------------------------------------------- GD402 argparse errors

_CHOICE = re.compile(r"invalid choice: '(?P<val>[^']*)' \(choose from (?P<ch>.*)\)")
_TYPE = re.compile(r"invalid (?P<t>\w+) value: '(?P<val>[^']*)'")


def argparse_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    flag = (g.get("flag") or "").split("/")[0]
    detail = (g.get("detail") or "").strip()
    m = _CHOICE.search(detail)
    if m:
        choices = re.findall(r"'([^']*)'", m.group("ch")) or [c.strip() for c in m.group("ch").split(",")]
        msg = f"{flag} got '{m.group('val')}', which is not one of its choices: {', '.join(choices)}."
        fix = [f"Use {flag} " + " or ".join(choices) + " (the values are case-sensitive)."]
        if flag.replace("-", "_") == "--vllm_mode":
            fix.append("colocate: vLLM runs inside every training process on the same GPUs; server: a separate "
                       "`swift rollout` process on other GPUs, reached with --vllm_server_host/--vllm_server_port.")
        return {"message": msg, "fix": fix}
    if "expected one argument" in detail:
        return {"message": f"{flag} was given without a value.",
                "fix": [f"Give {flag} a value; a flag at the very end of a line whose next line starts with another "
                        f"--flag (or a value starting with '-', which must be quoted as {flag}=-1) causes this."]}
    m = _TYPE.search(detail)
    if m:
        return {"message": f"{flag} got '{m.group('val')}', which is not a valid {m.group('t')}.",
                "fix": [f"Give {flag} a {m.group('t')} value (check for a shell variable that expanded to nothing "
                        f"or to text)."]}
    if "Truthy value expected" in detail:
        return {"message": f"{flag} takes true/false, and got something else: {detail}",
                "fix": [f"Use {flag} true or {flag} false."]}
    return {"message": f"The argument parser rejected {flag or 'the command line'}: {detail}",
            "fix": [f"Fix {flag or 'the flag'} as the parser says: {detail}"]}


# --------------------------------------------------------------------------- GD403-GD405 vLLM mode

def _layout(run: RunConfig) -> tuple[int | None, int | None]:
    return (run.world_size() or nproc_per_node(run), run.visible_gpus())


def vllm_mode_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    n, vis = _layout(run)
    if g.get("unsupported"):
        mode = run.get("vllm_mode", "...")
        return {"message": f"--vllm_mode {mode} was given but use_vllm is false: ms-swift >= 3.12 rejects a rollout "
                           f"mode without vLLM (generation would use plain transformers).",
                "fix": [f"Add --use_vllm true to generate with vLLM in {mode} mode, or drop --vllm_mode {mode}."]}
    procs = f"each of the {n} training processes" if n else "each training process"
    fix = [f"--vllm_mode colocate: {procs} runs its own vLLM engine on its GPU (this was the default in 3.5-3.11); "
           f"leave memory for training with --vllm_gpu_memory_utilization 0.4-0.6 and --sleep_level 1 "
           f"(currently {run.get('vllm_gpu_memory_utilization', 0.9)}).",
           "--vllm_mode server: start `CUDA_VISIBLE_DEVICES=<GPUs not used for training> swift rollout --model "
           "<model>` first, then add --vllm_server_host <host> --vllm_server_port <port> (swift rollout listens on "
           "8000 by default)."]
    if vis and n and vis > n:
        fix.append(f"{vis} GPUs are visible and {n} train: server mode can use the other {vis - n} for swift rollout.")
    return {"message": "--use_vllm true needs --vllm_mode: from ms-swift 3.12 it has no default (3.5-3.11 silently "
                       "picked colocate, or server when a server host was given).", "fix": fix}


def server_host_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    port = run.get("vllm_server_port", 8000)
    return {"message": "--vllm_mode server needs the address of a running `swift rollout` server, but neither "
                       "--vllm_server_host nor --vllm_server_base_url is set; ms-swift checks it with a bare assert, "
                       "so the AssertionError carries no message.",
            "fix": [f"Start the rollout server on GPUs the trainer does not use (`CUDA_VISIBLE_DEVICES=... swift "
                    f"rollout --model <model> --port {port}`) and add --vllm_server_host <its host, e.g. 127.0.0.1> "
                    f"--vllm_server_port {port} (or --vllm_server_base_url http://host:{port}).",
                    "Or run vLLM inside the training processes instead: --vllm_mode colocate."]}


# --------------------------------------------------------------------------- GD406 truncation

def truncation_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    ts = hits[0].groups.get("ts") or run.get("truncation_strategy", "?")
    delete_ok = at_least(run, 3, 7) is not False
    fix = ["--truncation_strategy left: keeps the end of an over-long prompt (the question) and cuts its start."]
    if delete_ok:
        fix.append("--truncation_strategy delete: drops over-long prompts and samples another row (ms-swift >= 3.7).")
    ml = run.get("max_length")
    if ml:
        fix.append(f"Prompts are measured against --max_length {ml}; raise it if many prompts are longer.")
    allowed = "'left' or 'delete'" if delete_ok else "'left'"
    return {"message": f"GRPO generates after the prompt, so an over-long prompt cannot be cut on the right: "
                       f"truncation_strategy='{ts}' is refused ({allowed} required).", "fix": fix}


# --------------------------------------------------------------------------- GD407 bf16 not supported

def bf16_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    text = hits[0].evidence.text
    given = run.cli.get("torch_dtype")
    src = (f"--torch_dtype {given} was given" if given else
           "no --torch_dtype was given, so ms-swift took bfloat16 from the model's config.json")
    if "fp16" in text and "bf16" not in text:
        return {"message": f"fp16 mixed precision was requested on a device that has no fp16 support (usually "
                           f"the CPU); {src}.",
                "fix": ["On CPU: --torch_dtype float32 --use_cpu true.",
                        "If this machine has a GPU, torch does not see it: check `nvidia-smi` and "
                        "`python -c 'import torch; print(torch.cuda.is_available())'` (a CPU-only torch build "
                        "is a common cause)."]}
    if "Ampere" in text or "cuda>=11" in text:
        return {"message": f"bf16 needs an Ampere or newer GPU (A100, A10, L40, RTX 30xx/40xx, H100); this GPU "
                           f"(e.g. V100, T4) has none. {src[0].upper() + src[1:]}.",
                "fix": ["--torch_dtype float32 (safe), or --torch_dtype float16 (halves memory but may overflow: "
                        "`Attempting to unscale FP16 gradients` means go back to float32).",
                        "Or move the run to a GPU with bf16."]}
    return {"message": f"transformers refuses bf16 here because no GPU with bf16 is available (a CPU-only run, or "
                       f"torch cannot see the GPU); {src}.",
            "fix": ["On CPU: --torch_dtype float32, or --torch_dtype bfloat16 --use_cpu true to keep bf16.",
                    "If this machine has a GPU, torch does not see it: check `nvidia-smi`, CUDA_VISIBLE_DEVICES and "
                    "`python -c 'import torch; print(torch.cuda.is_available())'` (a CPU-only torch build is a "
                    "common cause)."]}


# --------------------------------------------------------------------------- GD408 / GD409 / GD421 GPU layout

def _ids(n: int) -> str:
    return ",".join(str(i) for i in range(n))


def ngpu_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    ngpu, lws = _int(g.get("ngpu")), _int(g.get("lws"))
    if not ngpu or not lws:
        return {}
    if ngpu < lws:
        msg = (f"NPROC_PER_NODE is {lws} but only {ngpu} GPU(s) are visible to each process: ms-swift needs the "
               f"visible GPU count to be a multiple of the processes per node.")
        fix = [f"NPROC_PER_NODE={ngpu} (one process per visible GPU), or make {lws} GPUs visible "
               f"(CUDA_VISIBLE_DEVICES={_ids(lws)})."]
    else:
        msg = (f"{ngpu} GPUs are visible but NPROC_PER_NODE is {lws}: {ngpu} is not a multiple of {lws}, so ms-swift "
               f"cannot give every process the same number of GPUs.")
        fix = [f"NPROC_PER_NODE={ngpu} (one process per GPU, the usual DDP/DeepSpeed layout), or "
               f"CUDA_VISIBLE_DEVICES={_ids(lws)} to train on {lws} GPUs."]
        mult = [d for d in divisors(ngpu, 1) if d > 1 and ngpu // d >= 1]
        if mult:
            fix.append(f"Any NPROC_PER_NODE that divides {ngpu} passes this check ({', '.join(map(str, mult))}); "
                       f"fewer processes than GPUs means each process spreads one model over several GPUs "
                       f"(device_map), which DeepSpeed and vLLM refuse.")
    return {"message": msg, "fix": fix}


def vllm_device_map_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    vis = run.visible_gpus()
    n = nproc_per_node(run)
    have = (f"{vis} GPUs are visible and NPROC_PER_NODE is {n or 'not set (1 process)'}" if vis else
            "more GPUs are visible than there are training processes per node")
    fix = [f"NPROC_PER_NODE={vis or '<number of visible GPUs>'}: one training process per GPU; in colocate mode each "
           f"one also hosts its vLLM engine."]
    if vis and n and vis > n:
        fix.append(f"Or CUDA_VISIBLE_DEVICES={_ids(n)} to train on {n} GPUs; GPUs meant for vLLM need "
                   f"--vllm_mode server with `swift rollout` started on them separately.")
    return {"message": f"{have}, so each process would spread the model over several GPUs (device_map); GRPO with "
                       f"vLLM requires one GPU per training process.", "fix": fix}


def ds_device_map_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    ngpu, lws = _int(g.get("ngpu")), _int(g.get("lws"))
    if not ngpu or not lws:
        return {}
    per = ngpu // lws if lws else ngpu
    return {"message": f"{ngpu} GPUs are visible and {lws} process(es) run per node, so each process would spread the "
                       f"model over {per} GPUs (device_map); DeepSpeed shards across processes instead and refuses "
                       f"device_map.",
            "fix": [f"NPROC_PER_NODE={ngpu} with --deepspeed (one process per GPU).",
                    f"Or drop --deepspeed to keep the {per}-GPU-per-process device_map layout (naive model "
                    f"parallelism: the GPUs take turns)."]}


def tp_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    tp, ws = _int(g.get("tp")), _int(g.get("ws"))
    if not tp or not ws:
        return {}
    ok = [d for d in divisors(ws, 1)]
    up = ((ws // tp) + 1) * tp
    return {"message": f"Colocated vLLM groups consecutive training ranks into tensor-parallel groups of "
                       f"{tp}, so the world size {ws} must be a multiple of {tp} ({ws} % {tp} = {ws % tp}).",
            "fix": [f"--vllm_tensor_parallel_size {' or '.join(map(str, nearest(ok, tp)))} (divisors of the world "
                    f"size {ws}).",
                    f"Or train on a multiple of {tp} processes (e.g. NPROC_PER_NODE x NNODES = {up})."]}


def old_layout_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    """ms-swift 3.1-3.4 GPU split messages (vllm_device / num_infer_workers)."""
    run = ctx.run
    g = hits[0].groups
    n = nproc_per_node(run)
    vis = run.visible_gpus()
    if g.get("notp"):
        return {"message": "ms-swift 3.3-3.4 async mode (and the LMDeploy backend) cannot shard the rollout engine "
                           "with tensor parallelism.",
                "fix": ["Drop --tensor_parallel_size (1 GPU per vLLM worker), or use colocate mode.",
                        "On ms-swift >= 3.5: --vllm_mode colocate/server with --vllm_tensor_parallel_size."]}
    if g.get("dc") is not None:
        dc, niw = _int(g["dc"]), _int(g["niw"])
        return {"message": f"Colocate mode (3.3-3.4) runs one vLLM worker per training GPU, so num_infer_workers "
                           f"({niw}) must equal the GPU count ({dc}).",
                "fix": [f"--num_infer_workers {dc} with NPROC_PER_NODE={dc}.",
                        "On ms-swift >= 3.6 this flag is gone: --use_vllm true --vllm_mode colocate."]}
    if g.get("tot") is not None:
        tot, tr, inf = _int(g["tot"]), _int(g["tr"]), _int(g["inf"])
        fix = []
        if tot and inf is not None and tot - inf > 0:
            fix.append(f"NPROC_PER_NODE={tot - inf} (training) + --num_infer_workers {inf} (vLLM) = {tot} GPUs.")
        if tot and tr is not None and tot - tr > 0:
            fix.append(f"Or keep NPROC_PER_NODE={tr} and set --num_infer_workers {tot - tr}.")
        fix.append("On ms-swift >= 3.6 use --vllm_mode server with a separate `swift rollout` instead.")
        return {"message": f"Async mode (3.3-3.4) puts training and vLLM on separate GPUs: {tot} visible != {tr} "
                           f"training + {inf} inference.", "fix": fix}
    dev = g.get("dev") or "?"
    fix = []
    if vis:
        fix.append(f"Leave one GPU for vLLM: with {vis} visible GPUs use NPROC_PER_NODE={max(vis - 1, 1)} and "
                   f"--vllm_device auto (vLLM takes cuda:{max(vis - 1, 1)}).")
    elif n:
        fix.append(f"Make NPROC_PER_NODE+1 GPUs visible (CUDA_VISIBLE_DEVICES={_ids(n + 1)} for NPROC_PER_NODE={n}) "
                   f"so that vLLM gets a GPU of its own.")
    else:
        fix.append("Make one more GPU visible than NPROC_PER_NODE, so vLLM gets a GPU of its own.")
    fix.append("On ms-swift >= 3.5 use --vllm_mode colocate (vLLM shares the training GPUs) or --vllm_mode server.")
    return {"message": f"vLLM was placed on {dev}, which this process cannot see: in ms-swift 3.1-3.4 vLLM needs a GPU "
                       f"beyond the training ones.", "fix": fix}


# --------------------------------------------------------------------------- GD413 other argument conflicts

_MISC = {
    "gbs_spg": ("--generation_batch_size and --steps_per_generation were both set; they define the same thing.",
                ["Keep one: generation_batch_size = world size x per_device_train_batch_size x steps_per_generation."]),
    "reasoning": ("--vllm_reasoning_parser is for serving; GRPO training refuses it (ms-swift >= 3.8).",
                  ["Drop --vllm_reasoning_parser; parse the reasoning in your reward function instead."]),
    "soft_cache": ("The soft_overlong reward needs --soft_cache_length (the length of the penalty ramp before "
                   "soft_max_length).", []),
    "not_adapter": ("A directory passed with --adapters holds no adapter_config.json: it is a full model.", []),
    "liger_dm": ("liger_kernel does not work with device_map (several GPUs per process).",
                 ["Set NPROC_PER_NODE to the number of visible GPUs (DDP/DeepSpeed), or drop --use_liger_kernel."]),
    "liger": ("The Liger GRPO loss does not support a feature this run enables.",
              ["Drop --use_liger_kernel, or turn the listed feature off."]),
    "flash": ("padding_free/packing needs a flash-attention implementation.",
              ["--attn_impl flash_attn (pip install flash-attn --no-build-isolation), or drop --padding_free/"
               "--packing."]),
    "ref_lora": ("LoRA GRPO uses the base model with the adapter disabled as its reference, so --ref_model is refused.",
                 ["Drop --ref_model (or train full: --tuner_type full)."]),
    "tuner": ("The tuner type is not one ms-swift knows.", []),
    "adapters": ("Training accepts a single --adapters directory.", ["Pass one adapter directory (merge the others "
                                                                     "first with swift export --merge_lora true)."]),
    "best": ("load_best_model_at_end needs checkpoints at evaluation steps.",
             ["Use the same --save_strategy and --eval_strategy, with --save_steps a multiple of --eval_steps; or "
              "drop --load_best_model_at_end."]),
    "async_mt": ("Async generation does not support multi-turn rollouts.",
                 ["Drop --async_generate, or the multi-turn scheduler."]),
}


def misc_arg_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    key = next((k for k in _MISC if g.get(k)), None)
    if key is None:
        return {}
    msg, fix = _MISC[key]
    fix = list(fix)
    if key == "gbs_spg":
        n = run.world_size() or nproc_per_node(run) or 1
        b = _int(run.get("per_device_train_batch_size")) or 1
        gbs, spg = _int(run.get("generation_batch_size")), _int(run.get("steps_per_generation"))
        if gbs and spg:
            fix = [f"Keep one: --generation_batch_size {gbs} alone, or --steps_per_generation {spg} alone (world size "
                   f"{n} x per_device_train_batch_size {b} x {spg} = {n * b * spg} completions per generation); both "
                   f"must give a multiple of num_generations."]
    if key == "soft_cache":
        mcl = _int(run.get("max_completion_length")) or 512
        smax = _int(run.get("soft_max_length")) or mcl
        fix = [f"--soft_cache_length {max(smax // 4, 1)} (a quarter of soft_max_length {smax}; soft_max_length "
               f"defaults to max_completion_length {mcl})."]
    elif key == "not_adapter":
        d = g.get("adapter") or "<dir>"
        fix = [f"Pass it as --model {d} (full weights), or point --adapters at a LoRA checkpoint "
               f"(adapter_config.json + adapter_model.safetensors)."]
    elif key == "tuner":
        fix = [f"--{tuner_flag(run)} lora or full (other ms-swift tuners: longlora, adalora, llamapro, "
               f"adapter, vera, boft, fourierft, reft, bone)."]
    elif key == "liger" and g.get("feat"):
        msg = f"The Liger GRPO loss does not support {g['feat']}."
    return {"message": msg, "fix": fix}


def deprecated_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    if g.get("train_type"):
        return {"message": "--train_type still works in ms-swift 4.0.x but was renamed --tuner_type; 4.1 and later "
                           "stop with `remaining_argv: ['--train_type', ...]`.",
                "fix": ["Rename --train_type to --tuner_type in the script."]}
    name, ver = g.get("name") or "?", g.get("ver") or "?"
    new = RENAMED.get(name, (None, ""))[0]
    if name == "tensor_parallel_size":
        new = "vllm_tensor_parallel_size"
    if new:
        fix = [f"Rename --{name} to --{new} before upgrading to {ver}."]
    elif name in ("vllm_device", "num_infer_workers"):
        fix = [f"Drop --{name} before upgrading to {ver}: use --vllm_mode colocate (vLLM on the training GPUs) or "
               f"--vllm_mode server (a separate swift rollout)."]
    else:
        fix = [f"Drop --{name} before upgrading to {ver} (it is set automatically)."]
    return {"message": f"--{name} is deprecated and is removed in ms-swift {ver}; from then on it stops the run with "
                       f"remaining_argv.", "fix": fix}


def fsdp_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    if g.get("both"):
        return {"message": f"Both FSDP2 (--fsdp {run.get('fsdp', '')}) and DeepSpeed (--deepspeed "
                           f"{run.get('deepspeed', '')}) are set; a run uses one sharding backend.".replace("  ", " "),
                "fix": ["Keep --deepspeed (zero2/zero3) and drop --fsdp, or keep --fsdp and drop --deepspeed."]}
    if g.get("fsdp1"):
        return {"message": "GRPO in ms-swift supports FSDP2 only.",
                "fix": ["Set fsdp_version 2 in the FSDP config (or use --deepspeed zero3 instead)."]}
    return {"message": "A sharded FSDP2 state dict cannot be written as a model-only checkpoint.",
            "fix": ["Use FULL_STATE_DICT in the FSDP config, or drop --save_only_model true."]}


def dataset_load_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    ds = run.get("dataset")
    shown = " ".join(ds) if isinstance(ds, list) else (ds or "?")
    if g.get("file"):
        return {"message": f"The dataset file {g['file']} does not exist (seen from the directory swift was started "
                           f"in).",
                "fix": [f"Fix --dataset (now {shown}): use an absolute path, or launch from the directory the "
                        f"relative path starts from; on multi-node runs every node needs the file."]}
    if g.get("assistant"):
        return {"message": "A dataset row has an empty or malformed assistant message (ms-swift FAQ Q2).",
                "fix": ["GRPO rows need only the prompt turns (system/user) in `messages`; drop empty assistant turns "
                        "or fill them, and keep the roles alternating.",
                        "Find the row: the message prints it after `assistant_message:`."]}
    if g.get("hub"):
        return {"message": f"The dataset id in --dataset {shown} was not found on the hub.",
                "fix": ["Check the id (ModelScope ids differ from HF ids; USE_HF=1 switches to the HF hub), or "
                        "download it and pass the local path."]}
    return {"message": f"The dataset ({shown}) could not be parsed: a line is not valid JSON, or a column has "
                       f"different types in different rows.",
            "fix": ["Validate the file: python -c \"import json,sys; [json.loads(l) for l in open(sys.argv[1])]\" "
                    "<file> finds the broken line; make each column the same type in every row (e.g. `solution` "
                    "always a string).",
                    "The traceback lines above the error (`Generating train split`, the row number) point at the "
                    "file and row."]}


# --------------------------------------------------------------------------- GD420 GPU layout from the config


def trainer_launch(run: RunConfig):
    for launch in getattr(run, "launches", ()) or ():
        if launch.command in ("rlhf", "sft", "pt"):
            return launch
    return None


def trainer_layout(run: RunConfig) -> tuple[int | None, int | None, bool]:
    """(visible GPUs, NPROC_PER_NODE, taken from the trainer's own launch) for the training command."""
    launch = trainer_launch(run)
    if launch is not None and (launch.env.get("CUDA_VISIBLE_DEVICES") or launch.env.get("ASCEND_RT_VISIBLE_DEVICES")):
        v = launch.env.get("CUDA_VISIBLE_DEVICES") or launch.env.get("ASCEND_RT_VISIBLE_DEVICES") or ""
        vis = len([x for x in v.split(",") if x.strip()])
        n = _int(launch.env.get("NPROC_PER_NODE")) or _int(run.torchrun.get("nproc_per_node"))
        return vis, n, True
    if launch is None and len(getattr(run, "launches", ()) or ()) > 1:
        return None, None, False
    return run.visible_gpus(), nproc_per_node(run), False


def _bool(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1", "yes"))


class GpuLayout(Rule):
    """Config-only: visible GPUs that no training process (or vLLM) uses; vLLM TP that cannot divide the world."""

    kinds = frozenset({LINE})
    literals = ("must divide world size", "not compatible with `device_map`", "not compatible with device_map",
                "n_gpu: ")

    def __init__(self, meta):
        super().__init__(meta)
        self.layout_error = False

    def feed(self, kind: str, payload: Any) -> None:
        line: LogLine = payload
        if any(lit in line.text for lit in self.literals):
            self.layout_error = True  # the log states the layout error itself; its own rule explains it

    def finish(self, ctx: FinishContext) -> list[Finding]:
        run = ctx.run
        out: list[Finding] = []
        f = self._idle(run)
        if f:
            out.append(f)
        f = self._tp(run)
        if f:
            out.append(f)
        return out

    # visible GPUs vs processes
    def _idle(self, run: RunConfig) -> Finding | None:
        if run.command in ("rollout", "deploy", "infer", "export") and not trainer_launch(run):
            return None
        vis, n, own_env = trainer_layout(run)
        if not vis or vis < 2:
            return None
        mode = str(run.get("vllm_mode", "")).lower()
        server = mode == "server" or bool(run.get("vllm_server_host")) or bool(run.get("vllm_server_base_url"))
        if server and not own_env:
            return None  # the rollout server has its own CUDA_VISIBLE_DEVICES, which we cannot tell apart here
        use_vllm = _bool(run.get("use_vllm"))
        extra, why_extra = 0, ""
        niw = _int(run.get("num_infer_workers"))
        dev = run.get("vllm_device")
        if use_vllm and not server and niw and mode != "colocate":
            extra, why_extra = niw, f" + {niw} vLLM worker(s) (--num_infer_workers)"
        elif use_vllm and not server and dev is not None and mode != "colocate":
            cnt = len(dev) if isinstance(dev, list) else 1
            extra, why_extra = cnt, f" + {cnt} vLLM GPU(s) (--vllm_device {dev})"
        if self.layout_error:
            return None
        if n is None:
            used = 1 + extra
            if vis <= used:
                return None
            msg = (f"CUDA_VISIBLE_DEVICES lists {vis} GPUs but NPROC_PER_NODE is not set, so ms-swift starts one "
                   f"process that spreads the model over the GPUs (device_map): layers run one GPU at a time and the "
                   f"others wait.")
            fix = [f"NPROC_PER_NODE={vis - extra}" + (f" (plus {extra} GPU(s) for vLLM)" if extra else "")
                   + " to run one data-parallel process per GPU."]
            fix += self._batch_note(run, vis - extra)
            return self.make(message=msg, fix=fix, severity=Severity.warning,
                             title="Visible GPUs not used for data parallel training")
        nodes = _int(run.env.get("NNODES")) or _int(run.torchrun.get("nnodes")) or 1
        used = n + extra
        if vis <= used:
            return None
        idle = vis - used
        per_proc = vis // n if vis % n == 0 else None
        if per_proc and per_proc >= 2 and extra == 0:
            msg = (f"CUDA_VISIBLE_DEVICES lists {vis} GPUs but NPROC_PER_NODE is {n}: each process spreads its model "
                   f"over {per_proc} GPUs (device_map), so the GPUs take turns instead of training in parallel "
                   f"(DeepSpeed and vLLM refuse this layout).")
        else:
            msg = (f"CUDA_VISIBLE_DEVICES lists {vis} GPUs but only {used} are used: NPROC_PER_NODE {n}{why_extra}. "
                   f"{idle} GPU(s) per node sit idle (ms-swift versions with the is_mp check stop instead with "
                   f"`n_gpu: {vis}, local_world_size: {n}`).")
        fix = [f"NPROC_PER_NODE={vis - extra} to train on every visible GPU"
               + (f" (with {extra} kept for vLLM)" if extra else "") + ".",
               f"Or CUDA_VISIBLE_DEVICES={_ids(used)} if the other GPUs are meant for something else"
               + (" (the rollout server's GPUs belong in its own command)." if server else ".")]
        fix += self._batch_note(run, (vis - extra) * nodes)
        return self.make(message=msg, fix=fix, severity=Severity.warning)

    def _batch_note(self, run: RunConfig, world: int) -> list[str]:
        """What the generation batch becomes with the new world size (must stay a multiple of G)."""
        g = _int(run.get("num_generations")) or 8
        b = _int(run.get("per_device_train_batch_size")) or 1
        spg = _int(run.get("steps_per_generation"))
        s = spg or _int(run.get("gradient_accumulation_steps")) or 1
        sname = "steps_per_generation" if spg else "gradient_accumulation_steps"
        gbs = world * b * s
        if gbs % g == 0:
            return [f"With {world} processes: {world} x per_device_train_batch_size {b} x {sname} {s} = {gbs} "
                    f"completions per generation step, divisible by num_generations {g}."]
        ok = [d for d in divisors(gbs) if d >= 2]
        alt = f" (use --num_generations {' or '.join(map(str, nearest(ok, g)))})" if ok else ""
        return [f"With {world} processes: {world} x {b} x {s} = {gbs} completions per generation step, not divisible "
                f"by num_generations {g}{alt}."]

    def _tp(self, run: RunConfig) -> Finding | None:
        if self.layout_error or not _bool(run.get("use_vllm")):
            return None
        if str(run.get("vllm_mode", "colocate")).lower() == "server":
            return None
        tp = _int(run.get("vllm_tensor_parallel_size")) or _int(run.get("tensor_parallel_size"))
        ws = run.world_size()
        if not tp or tp < 2 or not ws or ws % tp == 0:
            return None
        ok = divisors(ws, 1)
        return self.make(
            message=(f"vllm_tensor_parallel_size {tp} does not divide the world size {ws}: colocated vLLM groups "
                     f"consecutive ranks into TP groups of {tp}, and ms-swift stops at trainer init with "
                     f"`vllm_tensor_parallel_size ({tp}) must divide world size ({ws}) evenly`."),
            fix=[f"--vllm_tensor_parallel_size {' or '.join(map(str, nearest(ok, tp)))} (divisors of {ws}).",
                 f"Or a world size that is a multiple of {tp}."],
            severity=Severity.warning, title="vLLM tensor parallel size does not divide the world size")


# --------------------------------------------------------------------------- GD430 / GD431 auto-detection

def _cands(text: str | None) -> list[str]:
    if not text:
        return []
    try:
        v = ast.literal_eval(text)
        return [str(x) for x in v] if isinstance(v, (list, tuple)) else []
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return re.findall(r"'([^']+)'", text)


def model_type_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    d = g.get("dir") or "the model directory"
    cands = _cands(g.get("cands"))
    msg = (f"ms-swift cannot tell which model_type {d} is: its config.json matches "
           + (f"{len(cands)} registered types ({', '.join(cands)})" if cands else "no single registered type")
           + ". This happens with local or renamed model folders; nothing has been loaded yet.")
    fix = []
    if cands:
        fix.append(f"--model_type {cands[0]} (candidates: {', '.join(cands)}; pick the one of your model family - "
                   f"names ending in _gte, _rm, _prm or _vl are embedding, reward or vision variants).")
    else:
        fix.append("--model_type <type> (the list of types is in the ms-swift Supported-models-and-datasets page).")
    if not ctx.run.cli.get("template"):
        fix.append("--template is usually needed too for such a folder (the chat template the model was tuned with, "
                   "e.g. qwen2_5 for Qwen2.5 instruct models).")
    return {"message": msg, "fix": fix}


def template_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    d = g.get("dir") or "the model directory"
    cands = _cands(g.get("cands"))
    msg = (f"ms-swift cannot pick the chat template for {d}: "
           + (f"{len(cands)} templates fit this model type ({', '.join(cands)})." if cands else
              "no single template fits.")
           + " Nothing has been loaded yet.")
    fix = []
    if cands:
        fix.append(f"--template <name>, one of {', '.join(cands)}: the template must match how the model was "
                   f"chat-tuned (for a Qwen2.5 instruct model: qwen2_5; a base model trained by you: the template "
                   f"you trained it with).")
    else:
        fix.append("--template <name> (see the ms-swift Supported-models-and-datasets page).")
    return {"message": msg, "fix": fix}


# --------------------------------------------------------------------------- GD432 length

def _round_up(n: int) -> int:
    for step in (256, 512, 1024, 2048, 4096):
        if n <= step * 8:
            return ((n + step - 1) // step) * step
    return ((n + 4095) // 4096) * 4096


def max_length_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    gave_up = any(h.groups.get("retrieve") for h in hits)
    sized = [h for h in hits if h.groups.get("len")]
    g = (sized[0] if sized else hits[0]).groups
    length = _int(g.get("len"))
    ml = _int(g.get("ml")) or _int(run.get("max_length"))
    mcl = _int(run.get("max_completion_length"))
    ts = run.get("truncation_strategy")
    fix = []
    if length and ml:
        msg = f"A row encodes to {length} tokens, more than --max_length {ml}."
        new = _round_up(length)
    else:
        msg = ("ms-swift gave up after repeatedly failing to encode dataset rows: usually the prompts are longer "
               "than --max_length" + (f" {ml}" if ml else "") + " (or the rows are malformed; the warnings "
               "`There are errors in the template.encode` just above carry the first real error).")
        new = _round_up(ml * 2) if ml else None
    if new:
        fix.append(f"--max_length {new} (ms-swift measures the prompt against it in GRPO).")
    fix.append("--truncation_strategy left (cut the start of long prompts) or delete (skip them)"
               + (f"; it is now {ts}." if ts else "."))
    if mcl and new:
        fix.append(f"With vLLM, keep --vllm_max_model_len >= max_length + max_completion_length = {new} + {mcl} = "
                   f"{new + mcl}.")
    if not gave_up and (ctx.ended or ctx.metrics_steps > 0):
        return {"message": msg + f" {len(sized) or len(hits)} such row(s) were skipped; training went on without them.",
                "fix": fix, "severity": Severity.warning}
    return {"message": msg, "fix": fix}


# --------------------------------------------------------------------------- GD437 / GD438 / GD439

def too_little_data_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    n = run.world_size() or 1
    b = _int(run.get("per_device_train_batch_size")) or 1
    ga = _int(run.get("gradient_accumulation_steps")) or 1
    g = _int(run.get("num_generations")) or 8
    per_step = max(n * b * ga // g, 1)
    return {"message": f"Training ended without a single checkpoint, so the final summary has no "
                       f"last_model_checkpoint: the dataset is too small for one step. One optimizer step uses world "
                       f"size {n} x per_device_train_batch_size {b} x gradient_accumulation_steps {ga} / "
                       f"num_generations {g} = {per_step} prompt(s).",
            "fix": [f"Give the run more rows than {per_step} prompts per step (GRPO usually needs a few thousand), "
                    f"or check the dataset path and any `#N` sample limit in --dataset.",
                    "The rows may also have been dropped: look for `There are errors in the dataset` warnings."]}


def unrecognized_model_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    d = (hits[0].groups.get("dir") or run.get("model") or "<dir>").rstrip("/")
    tuner = run.tuner() or "?"
    full = "full" in str(run.cli.get("tuner_type") or run.cli.get("train_type") or tuner)
    msg = (f"--model {d} has no usable config.json. When it is a LoRA checkpoint (adapter_config.json + "
           f"adapter_model.safetensors, no model weights), it must be passed as an adapter, not as the model.")
    fix = [f"--model <base model> --adapters {d}" +
           (" --tuner_type full: ms-swift merges the adapter into the base first and then trains every weight "
            "(verified on 4.6.0)." if full else " (the base is `base_model_name_or_path` in its adapter_config.json)."),
           f"Or merge first: swift export --adapters {d} --merge_lora true, then --model {d}-merged --load_args false "
           f"(the merged dir carries the LoRA run's args.json)."]
    fix.append("If it is not an adapter, the path is wrong or the download is incomplete: the folder needs "
               "config.json with a model_type key.")
    return {"message": msg, "fix": fix}


def ckpt_index_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    d = (hits[0].groups.get("dir") or run.get("resume_from_checkpoint") or "<checkpoint>").rstrip("/.")
    t = tuner_flag(run)
    tuner = run.tuner() or "full"
    msg = (f"--resume_from_checkpoint {d} holds no full model weights (no model.safetensors or index): it is most "
           f"likely a LoRA adapter checkpoint, and this run is {tuner}-parameter, so the Trainer cannot restore it.")
    fix = [f"To continue the LoRA run: --{t} lora --resume_from_checkpoint {d}.",
           f"To train all weights starting from that LoRA: --model <base model> --adapters {d} --{t} full, without "
           f"--resume_from_checkpoint (a new optimizer state; the adapter is merged first).",
           "For a full checkpoint written with DeepSpeed ZeRO-3 without 16-bit gathering, run zero_to_fp32.py in "
           "it first."]
    return {"message": msg, "fix": fix}


# --------------------------------------------------------------------------- GD440-GD443 multimodal

def _pixels(run: RunConfig) -> tuple[str, str]:
    mp = run.env.get("MAX_PIXELS")
    vmp = run.env.get("VIDEO_MAX_PIXELS")
    return (f"MAX_PIXELS={mp}" if mp else "MAX_PIXELS unset (ms-swift default 16384x28x28 = 12845056 pixels per "
            "image)",
            f"VIDEO_MAX_PIXELS={vmp}" if vmp else "VIDEO_MAX_PIXELS unset")


def image_load_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    f = g.get("file")
    text = hits[0].evidence.text
    if g.get("ratio"):
        return {"message": f"An image has an aspect ratio of {g['ratio']} (qwen_vl_utils refuses more than "
                           f"{g.get('maxr') or 200}): a thin strip or a broken file.",
                "fix": ["Drop or pad such images in the dataset (width/height and height/width both under 200)."]}
    if g.get("small"):
        return {"message": "An image is smaller than one vision patch (qwen_vl_utils smart_resize refuses it).",
                "fix": ["Drop or upscale images under 28 pixels on a side; check for empty or corrupt files."]}
    if "truncated" in text:
        return {"message": "An image file is truncated (an incomplete download or copy).",
                "fix": ["Re-download or remove the file; find it by opening every image with PIL before training."]}
    if "DECORD" in text.upper() or g.get("video"):
        return {"message": "A video could not be decoded.",
                "fix": ["Check the video file (ffprobe <file>) and the decord/av install; remove unreadable videos."]}
    if "No such file" in text:
        return {"message": f"The image or video {f or ''} does not exist at the path written in the dataset.",
                "fix": ["Relative paths are resolved from the directory you launch swift in; use absolute paths, "
                        "or set ROOT_IMAGE_DIR to the folder the relative paths start from.",
                        "Check that every node of a multi-node run sees the same files."]}
    return {"message": f"PIL cannot read {f or 'an image'}: the file is not an image, is empty or corrupt, or is in a "
                       f"format PIL does not know (e.g. HEIC, AVIF without plugins).",
            "fix": ["Open every image of the dataset with PIL before training and drop or re-encode the ones that fail "
                    "(e.g. convert to JPEG/PNG).",
                    "If the path points to an HTML error page from a failed download, re-download it."]}


def image_tokens_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    tok, feat = _int(g.get("tok")), _int(g.get("feat"))
    ml = run.get("max_length")
    mp, vmp = _pixels(run)
    nums = f" (tokens {tok}, features {feat})" if tok is not None and feat is not None else ""
    msg = (f"The number of image/video placeholder tokens in the prompt and the vision features disagree{nums}: the "
           f"prompt was truncated through the image tokens, or the processor settings differ between encoding and "
           f"the model.")
    need = f"; these images need {feat} tokens" if feat else ""
    fix = [f"Raise --max_length (now {ml or 'the model default'}{need}) so no prompt is cut inside its image tokens, and "
           f"use --truncation_strategy delete rather than left for multimodal GRPO.",
           f"Or shrink images so they need fewer tokens: {mp}; {vmp}. E.g. MAX_PIXELS=262144 (the value of "
           f"ms-swift's multimodal GRPO guide) or 1003520 (1280x28x28); for video also VIDEO_MAX_PIXELS and "
           f"FPS_MAX_FRAMES."]
    return {"message": msg, "fix": fix}


def mm_limit_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    mod = g.get("mod") or "image"
    n = _int(g.get("n")) or 1
    got = _int(g.get("got"))
    want = got or n + 1
    return {"message": f"vLLM was started to accept at most {n} {mod}(s) per prompt, and a sample carries "
                       f"{got if got else 'more'}.",
            "fix": [f"--vllm_limit_mm_per_prompt '{{\"{mod}\": {want}}}' (the most {mod}s any sample has; in server "
                    f"mode pass it to swift rollout).",
                    f"Or limit the dataset to {n} {mod}(s) per sample."]}


# --------------------------------------------------------------------------- GD436 KeyError 'prompt' in trl

_KEY_PROMPT = re.compile(r"""KeyError: ['"]prompt['"]""")
_TRL_GRPO = re.compile(r"trl[\\/]trainer[\\/]grpo_trainer\.py")


class TrlPromptKeyError(Rule):
    """ms-swift hands its batch to trl's own ``_prepare_inputs``, which wants raw rows with a 'prompt' key
    (dev-log 010): trl and the ms-swift checkout do not match, or the rows lack the expected columns."""

    kinds = frozenset({LINE, EXCEPTION})
    literals = ("KeyError", "'prompt'", "_prepare_inputs", "grpo_trainer")

    def __init__(self, meta):
        super().__init__(meta)
        self.key_line: LogLine | None = None
        self.frame_line: LogLine | None = None
        self.swift_frames = False
        self._pending_keyerror: LogLine | None = None

    def feed(self, kind: str, payload: Any) -> None:
        if kind == EXCEPTION:
            exc: ExceptionInfo = payload
            if exc.short_type == "KeyError" and exc.message.strip().strip("'\"") == "prompt":
                last = exc.raised_at
                if (last is not None and last.func == "_prepare_inputs" and _TRL_GRPO.search(last.path)
                        and self.key_line is None):
                    self.key_line = LogLine(exc.raw, exc.raw, exc.where, exc.rank, exc.seq)
                if any("swift" in fr.path for fr in exc.frames):
                    self.swift_frames = True
            return
        line: LogLine = payload
        t = line.text.strip()
        if "_prepare_inputs" in t and _TRL_GRPO.search(t) and self.frame_line is None:
            self.frame_line = line
        if "swift" in t and ("grpo_trainer" in t or "rlhf" in t):
            self.swift_frames = True
        if _KEY_PROMPT.search(t) and self.key_line is None:
            self.key_line = line
        elif "KeyError" in t and ":" not in t.split("KeyError", 1)[1][:2]:
            self._pending_keyerror = line  # debugger view: "Exception has occurred: KeyError" then "'prompt'"
        elif t in ("'prompt'", '"prompt"') and self._pending_keyerror is not None and self.key_line is None:
            self.key_line = self._pending_keyerror

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if self.key_line is None or self.frame_line is None:
            return []
        ev = [evidence_of(self.key_line), evidence_of(self.frame_line)]
        who = "ms-swift's GRPO trainer" if self.swift_frames else "the GRPO trainer"
        msg = (f"trl's GRPOTrainer._prepare_inputs looked for a 'prompt' key in the batch and found none: {who} "
               f"handed it rows in another format. trl's own path expects raw rows with a 'prompt' column, while "
               f"ms-swift encodes 'messages' itself, so reaching trl's _prepare_inputs from ms-swift usually means the "
               f"installed trl does not match the ms-swift version (or a modified checkout).")
        fix = ["Reinstall ms-swift with the trl it was released with (`pip install -e .` in the checkout, or "
               "`pip install 'ms-swift==<version>'`), then `pip show trl` against the README dependency table "
               "(HEAD: trl >=0.15,<1.0, recommended 0.29.1; ms-swift 3.8: trl <0.21).",
               "Keep the dataset in ms-swift's format: a `messages` list (system/user turns) plus the columns your "
               "reward functions read (e.g. `solution` for accuracy); a custom `prompt` column is not what it wants.",
               "Compare with an unmodified ms-swift checkout if you changed trainer code."]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=self.key_line.seq)]


# --------------------------------------------------------------------------- GD414 comment inside a command

_CONT_COMMENT = re.compile(r"\\[ \t]*\r?\n([ \t]*#[^\n]*)\r?\n")


class CommentBreaksCommand(Rule):
    """A ``# --flag \\`` line inside a backslash-continued command ends the command there: bash treats the rest
    of the line (the backslash included) as a comment, so every flag below it is never passed (dev-log 002)."""

    kinds = frozenset()

    def finish(self, ctx: FinishContext) -> list[Finding]:
        out: list[Finding] = []
        for text in ctx.run.command_texts:
            for m in _CONT_COMMENT.finditer(text):
                comment = m.group(1).strip()
                dropped: list[str] = []
                for line in text[m.end():].splitlines():
                    t = line.strip()
                    if not t:
                        break
                    if t.startswith("#"):
                        continue
                    if not t.startswith("-"):
                        break
                    dropped += [tok.split("=", 1)[0] for tok in t.rstrip("\\").split() if tok.startswith("--")]
                if not dropped:
                    continue
                shown = ", ".join(dropped[:12]) + (f" and {len(dropped) - 12} more" if len(dropped) > 12 else "")
                msg = (f"The line `{comment[:80]}` sits inside a backslash-continued command. bash ends the command "
                       f"at a comment (its trailing backslash is part of the comment), so the {len(dropped)} flag(s) "
                       f"after it never reached swift: {shown}. swift ran with their defaults, and the shell then "
                       f"tried to run `{dropped[0]} ...` as a command of its own.")
                fix = ["Delete the commented line (or move it below the command); to switch a flag off, remove the "
                       "whole line.",
                       f"Then check the run again: {shown} now take effect."]
                out.append(self.make(message=msg, fix=fix, severity=Severity.warning))
                break
        return out[:1]
