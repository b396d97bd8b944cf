"""GD420, from the configuration alone: visible GPUs that no training process (or vLLM) uses, and a colocated
vLLM tensor-parallel size that does not divide the world size."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule
from ...signals import LogLine
from ...sources.swiftconfig import RunConfig
from ...swift.batch import divisors, nearest
from ...values import as_int
from .._numbers import assumptions, computed, read_or
from ..hang.prose import cut_before_error
from ._layout import gpu_ids, nproc_per_node


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
        raw = launch.env.get("NPROC_PER_NODE")
        if raw is not None and as_int(raw) is None or "$" in v:
            return None, None, True  # set from a variable the command does not show: its value is unknown
        n = as_int(raw) or as_int(run.torchrun.get("nproc_per_node"))
        return vis, n, True
    if launch is None and len(getattr(run, "launches", ()) or ()) > 1:
        return None, None, False
    return run.visible_gpus(), nproc_per_node(run), False


def _several_ranks(ctx: RunState) -> bool:
    """The log itself shows more than one training process (a `[rankN]:` prefix or an exception of a rank > 0):
    the visible GPUs are in use, whatever the launch command read says."""
    if any(e.rank for e in ctx.exceptions):
        return True
    return any(line.rank for tail in ctx.tails.values() for line in tail)


def _shared_vllm_device(dev: Any, n: int | None) -> int | None:
    """The index of a training GPU that trl's --vllm_device names ("cuda:0" with one training process), else None."""
    if not isinstance(dev, str) or not dev.startswith("cuda:"):
        return None
    index = as_int(dev[5:])
    return index if index is not None and index < (n or 1) else None


def _bool(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1", "yes"))


class GpuLayout(Rule):
    """Config-only: visible GPUs that no training process (or vLLM) uses; vLLM TP that cannot divide the world."""

    kinds = frozenset({LogLine})
    literals = ("must divide world size", "not compatible with `device_map`", "not compatible with device_map",
                "n_gpu: ")

    def __init__(self, meta):
        super().__init__(meta)
        self.layout_error = False

    def feed(self, signal: Any) -> None:
        line: LogLine = signal
        if any(lit in line.text for lit in self.literals):
            self.layout_error = True  # the log states the layout error itself; its own rule explains it

    def finish(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        out: list[Finding] = []
        f = self._idle(run) if not _several_ranks(ctx) else None
        if f and (cut_before_error(ctx) or ctx.exceptions or ctx.open_tracebacks):
            # a paste that says the run failed, or a log that shows its exception (or a stack cut before it), with the
            # command beside it: the layout is a remark on the command, not the failure asked about
            f = replace(f, severity=Severity.info)
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
        placed = as_int(run.torchrun.get("gpus_placed"))
        if placed is not None and placed >= vis:
            return None  # a Ray job (OpenRLHF) places its reference model and vLLM engines on the other GPUs
        mode = str(run.get("vllm_mode", "")).lower()
        server = run.vllm_server()
        if server and not own_env:
            return None  # the rollout server has its own CUDA_VISIBLE_DEVICES, which we cannot tell apart here
        use_vllm = _bool(run.get("use_vllm"))
        extra, why_extra = 0, ""
        niw = as_int(run.get("num_infer_workers"))
        dev = run.get("vllm_device")
        if _bool(run.get("use_lmdeploy")) and not server and n is not None:
            # ms-swift 3.x's LMDeploy rollout engine (async, --use_lmdeploy) takes the GPUs after NPROC_PER_NODE's
            # when no device is given: the spare GPUs are the engine's
            return None
        if use_vllm and not server and niw and mode != "colocate":
            extra, why_extra = niw, f" + {niw} vLLM worker(s) (--num_infer_workers)"
        elif use_vllm and not server and dev is not None and mode != "colocate":
            cnt = len(dev) if isinstance(dev, list) else 1
            extra, why_extra = cnt, f" + {cnt} vLLM GPU(s) (--vllm_device {dev})"
            shared = _shared_vllm_device(dev, n)
            if shared is not None and vis > (n or 1):
                return self._vllm_on_training_gpu(dev, shared, n or 1, vis)
        if self.layout_error:
            return None
        if n is None and run.command is None:
            return None  # not a `swift` launch (accelerate, torchrun of a script, python code): its process count
            # is the launcher's own, which this rule does not read, and NPROC_PER_NODE means nothing to it
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
        nodes = as_int(run.env.get("NNODES")) or as_int(run.torchrun.get("nnodes")) or 1
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
               f"Or CUDA_VISIBLE_DEVICES={gpu_ids(used)} if the other GPUs are meant for something else"
               + (" (the rollout server's GPUs belong in its own command)." if server else ".")]
        fix += self._batch_note(run, (vis - extra) * nodes)
        return self.make(message=msg, fix=fix, severity=Severity.warning)

    def _vllm_on_training_gpu(self, dev: str, index: int, n: int, vis: int) -> Finding:
        """trl 0.14-0.16's vllm_device names a GPU a training process uses while visible GPUs have none."""
        idle = vis - n
        msg = (f"vLLM is placed on {dev} (--vllm_device), the GPU training process {index} also uses, while "
               f"{idle} of the {vis} visible GPUs run nothing: the engine and the training share one GPU's memory "
               f"and the spare GPU sits idle.")
        fix = [f"--vllm_device cuda:{n} (the first GPU after the {n} training process(es); trl's default 'auto' "
               f"picks it) so that vLLM has a GPU of its own.",
               f"Or train on {vis - 1} process(es) and keep one GPU for vLLM: --num_processes {vis - 1} with "
               f"--vllm_device cuda:{vis - 1}." if vis - 1 > n else
               f"Or, if the spare GPU is meant for something else, list only {n} GPU(s) in CUDA_VISIBLE_DEVICES "
               f"(vLLM then shares them with training: lower --vllm_gpu_memory_utilization to fit)."]
        return self.make(message=msg, fix=fix, severity=Severity.warning,
                         title="vLLM placed on a training GPU while another visible GPU is idle")

    def _batch_note(self, run: RunConfig, world: int) -> list[str]:
        """What the generation batch becomes with the new world size (must stay a multiple of G)."""
        g_ = read_or(as_int(run.get("num_generations")), 8)
        b_ = read_or(as_int(run.get("per_device_train_batch_size")), 1)
        spg = as_int(run.get("steps_per_generation"))
        s_ = read_or(spg or as_int(run.get("gradient_accumulation_steps")), 1)
        sname = "steps_per_generation" if spg else "gradient_accumulation_steps"
        g, b, s = g_.value, b_.value, s_.value
        gbs = computed(world * b * s, b_, s_)
        why = assumptions(("num_generations", g_), ("per_device_train_batch_size", b_), (sname, s_),
                          why="ms-swift's defaults, not in the command")
        if gbs.value % g == 0:
            return [f"With {world} processes: {world} x per_device_train_batch_size {b_} x {sname} {s_} = {gbs} "
                    f"completions per generation step, divisible by num_generations {g_}{why}."]
        ok = [d for d in divisors(gbs.value) if d >= 2]
        alt = f" (use --num_generations {' or '.join(map(str, nearest(ok, g)))})" if ok else ""
        return [f"With {world} processes: {world} x {b_} x {s_} = {gbs} completions per generation step, not divisible "
                f"by num_generations {g_}{alt}{why}."]

    def _tp(self, run: RunConfig) -> Finding | None:
        if self.layout_error or not _bool(run.get("use_vllm")):
            return None
        if str(run.get("vllm_mode", "colocate")).lower() == "server":
            return None
        tp = as_int(run.get("vllm_tensor_parallel_size")) or as_int(run.get("tensor_parallel_size"))
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
