"""A run stopped by hand (Ctrl-C: KeyboardInterrupt) during start-up, pasted without the lines before it: the stack
says where the process sat when its user gave up on it. People press Ctrl-C on a run that stays silent, so a
KeyboardInterrupt raised inside process-group setup, a weight load or a vLLM engine's start is a start-up hang
(GD320) named by its frames. Pure: the exceptions and findings of a session in, a finding or None out."""
from __future__ import annotations

from collections.abc import Sequence

from ...classify.component import norm
from ...engine.state import RunState
from ...model import Evidence, Severity
from ...signals import ExceptionInfo, Frame, LogLine
from ._progress import SIGNAL_SENDERS
from .endings import plain

# start-up phases by the frames they run ("path func" substrings; innermost checked first), from the libraries'
# own call chains: torch.distributed (distributed_c10d.py init_process_group -> rendezvous.py -> TCPStore),
# torch elastic's rendezvous, DeepSpeed's init_distributed; transformers' from_pretrained and safetensors loads;
# vLLM's engine start (LLM.__init__, KV-cache sizing) and trl's client waiting for `trl vllm-serve`
_STARTUP: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("server-connect", ("vllm_client.py check_server", "vllm_client.py init_communicator", "vllm_client.py __init__")),
    ("setup", (" init_process_group", "rendezvous.py", "TCPStore", "_create_c10d_store", "next_rendezvous",
               " init_distributed", "elastic/rendezvous/", "_store_based_barrier")),
    # the model wrapped for distributed training: DeepSpeed's engine broadcasts every parameter from rank 0
    # (runtime/engine.py _configure_distributed_model -> _broadcast_model), DDP checks and syncs them
    # (parallel/distributed.py _verify_param_shape_across_processes, _sync_module_states), accelerate's prepare runs both
    ("wrap", ("deepspeed/runtime/engine.py _broadcast_model", " _configure_distributed_model",
              "deepspeed/__init__.py initialize", " _verify_param_shape_across_processes", " _sync_module_states",
              "accelerate/accelerator.py prepare")),
    ("vllm-init", ("vllm/entrypoints/llm.py __init__", "_initialize_kv_caches", "determine_num_available_blocks",
                   "initialize_cache", "vllm/engine/llm_engine.py __init__", "vllm/v1/engine/core.py __init__",
                   "wait_for_engine_startup",
                   # vLLM V1's worker warming up after the load (vllm/v1/worker/gpu_worker.py compile_or_warm_up_model,
                   # gpu_model_runner.py capture_model / profile_run)
                   " compile_or_warm_up_model", " capture_model", " profile_run", "vllm/v1/worker/gpu/warmup.py")),
    ("model-load", (" from_pretrained", " _load_pretrained_model", " load_state_dict", "safetensors/torch.py",
                    " load_checkpoint_in_model", " load_checkpoint_and_dispatch")),
    # huggingface_hub's and modelscope's downloads (file_download.py http_get, snapshot_download), innermost first: a
    # download runs inside from_pretrained, and a stuck download is the download's, not the load's
    ("download", ("huggingface_hub/file_download.py", " snapshot_download", " hf_hub_download", "modelscope/hub/")),
    ("dataset-map", ("datasets/arrow_dataset.py map", "datasets/load.py load_dataset", " _map_single")),
)
STARTUP_WHERE = {
    "server-connect": "waiting for the vLLM rollout server to answer",
    "setup": "setting up the process group (rendezvous: every rank must join before any of them goes on)",
    "wrap": ("wrapping the model for distributed training (DeepSpeed's engine or DDP: every rank takes part in the "
             "first collective, the broadcast or check of the parameters)"),
    "vllm-init": "starting the vLLM engine (loading it and sizing its KV cache)",
    "model-load": "loading the model weights",
    "download": "downloading the model or dataset files",
    "dataset-map": "loading or preprocessing the dataset (datasets' load_dataset / map)",
}
STARTUP_FIX = {
    "server-connect": ["Start the rollout server first and wait for its 'Application startup complete' line; then "
                       "`curl http://HOST:PORT/health/` from the trainer's machine must answer (HOST and PORT the "
                       "server's, as the trainer is given them)."],
    "setup": ["Every rank must reach init_process_group: the number of processes started must equal the world size "
              "the launcher was given, on every node, with the same MASTER_ADDR and MASTER_PORT; a port held by an "
              "earlier run (`ss -ltnp | grep PORT`) or a firewall between nodes keeps the others waiting.",
              "Run with TORCH_DISTRIBUTED_DEBUG=DETAIL (and NCCL_DEBUG=INFO) to see which rank never joins."],
    "wrap": ["The first collective of the run waits for a rank that never joins it or a network that does not carry "
             "it: run a cross-node all_reduce alone (torchrun on every node, NCCL_DEBUG=INFO) to test the network; "
             "name the interface (NCCL_SOCKET_IFNAME) and turn InfiniBand off (NCCL_IB_DISABLE=1) where there is none; "
             "a setting that holds every CUDA launch (CUDA_LAUNCH_BLOCKING=1, which transformers' full_determinism "
             "sets) is worth a run without it."],
    "vllm-init": ["A vLLM engine that never finishes starting is most often waiting for GPU memory or for its "
                  "workers: check `nvidia-smi` while it waits (another process on the GPU?) and lower "
                  "gpu_memory_utilization or max_model_len for a test."],
    "model-load": ["A load that stops is most often slow storage or host memory running out: check `free -g` and "
                   "`dmesg -T | grep -i kill` while it loads, and put the weights on a local disk."],
    "download": ["Download the files once outside the run (huggingface-cli download / modelscope download) and pass "
                 "the local path; on the training nodes set HF_HUB_OFFLINE=1, or HF_ENDPOINT to a mirror that answers."],
    "dataset-map": ["Preprocess with one worker to confirm (datasets num_proc=1, or the trainer's dataset_num_proc 1): a "
                    "worker that died or deadlocked leaves the map waiting; a dataset on a network disk can also be "
                    "that slow."],
}


_AFTER_CTRL_C = {"KeyboardInterrupt", "SignalException", "ChildFailedError", "SystemExit"}

# the frames of a process waiting for its child (CPython Lib/subprocess.py: run -> communicate -> wait -> _wait)
_WAIT_FUNCS = frozenset({"wait", "_wait", "communicate", "_communicate", "_try_wait", "run", "call", "check_call"})


def in_subprocess_wait(frames: tuple[Frame, ...]) -> bool:
    """The innermost Python frames are subprocess's wait for a child (time.sleep and waitpid print no frame)."""
    inner = [f for f in frames[-3:] if norm(f.path).endswith("/subprocess.py")]
    return bool(inner) and inner[-1] is frames[-1] and all(f.func in _WAIT_FUNCS for f in inner)


def startup_phase(frames: Sequence[Frame]) -> str | None:
    """The start-up phase a traceback's stack (outermost frame first) was in, or None (training, or frames that say
    nothing)."""
    return startup_phase_of([f"{f.path} {f.func}" for f in reversed(frames)])


def dump_startup_phase(frames: Sequence[tuple[str, str, int]]) -> str | None:
    """The same for a py-spy thread's (func, file, line) frames, innermost first."""
    return startup_phase_of([f"{path} {func}" for func, path, _ in frames])


def startup_phase_of(hays: list[str]) -> str | None:
    """The start-up phase of a stack given as "path func" strings, innermost first (a py-spy dump's order)."""
    for hay in hays:  # the innermost frame that names a phase decides (a download inside from_pretrained)
        for phase, keys in _STARTUP:
            if any(k in hay for k in keys):
                return phase
    return None


def interrupted_at_start(ctx: RunState, steps: int) -> tuple[ExceptionInfo, str] | None:
    """The KeyboardInterrupt that ends the log, raised in a start-up phase, when nothing else explains the log."""
    if steps or any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
        return None
    stops = [e for e in ctx.exceptions if e.short_type == "KeyboardInterrupt" and e.frames]
    if not stops:
        return None
    last = stops[-1]
    # what a Ctrl-C leaves after it: the other ranks' interrupts, torch elastic's SignalException and ChildFailedError;
    # any other exception after it, or a cut stack outside start-up, is a failure of its own
    if any(e.seq > last.seq and e.short_type not in _AFTER_CTRL_C for e in ctx.exceptions):
        return None
    if any(line.seq > last.seq and not startup_phase(frames) for line, frames in ctx.open_tracebacks or ()):
        return None
    phase = startup_phase(last.frames)
    return (last, phase) if phase else None


_INTERRUPTS = ("SIGINT", "SIGHUP")   # signals a person sends: a Ctrl-C, a closed terminal


def signalled_at_start(ctx: RunState, steps: int, death: tuple[LogLine, str] | None) -> tuple[LogLine, str | None] | None:
    """(the launcher's death-signal line, the start-up phase its workers' cut stack shows or None) when torch
    elastic's agent received an interrupt (Ctrl-C: SIGINT; a closed terminal: SIGHUP) before any training step and
    nothing else explains the log."""
    if death is None or death[1] not in _INTERRUPTS or steps:
        return None
    line = death[0]
    if any(f.severity == Severity.error and f.role.value != "consequence" for f in ctx.findings):
        return None
    if any(e.seq > line.seq and e.short_type not in _AFTER_CTRL_C for e in ctx.exceptions):
        return None
    stacks = [startup_phase(frames) for ln, frames in ctx.open_tracebacks or () if ln.seq > line.seq]
    stacks += [startup_phase(e.frames) for e in ctx.exceptions if e.seq > line.seq]
    return line, next((p for p in stacks if p), None)


def progress_said(ctx: RunState, line: LogLine) -> LogLine | None:
    """A line of the input that holds ``line`` which says training had made progress ("若干个step之后", "after a few
    steps"): an excerpt without step rows, not a run that never stepped."""
    from .symptom_words import MID  # here: only a run stopped by a signal reads the progress words
    return next((t for t in ctx.tails.get(line.where.path) or () if MID.search(plain(t.text))), None)


def excerpt_from_signal(ctx: RunState, line: LogLine) -> tuple[bool, LogLine | None]:
    """(whether the log is an excerpt around the launcher's death-signal line, the line that says steps had run or
    None): a paste that starts at the signal (no launch lines, command or arguments read, and nothing before it), or
    one whose lines say steps had run (a person's words, a bar past its start), so that no training step row in it
    says nothing of the steps before. A paste that starts at the signal is told as that, whatever its words."""
    said = progress_said(ctx, line)
    if line.where.line <= 2:
        return not ctx.whole_log() or said is not None, None
    return said is not None, said


def signal_excerpt_message_and_fix(line: LogLine, sig: str, said: LogLine | None = None) -> tuple[str, list[str],
                                                                                                   list[Evidence]]:
    if said is not None:
        from .symptom_words import MID
        words = MID.search(plain(said.text))
        # the words themselves, quoted: the reading rests on them, not on a step row
        where = (f"The paste's words at line {said.where.line} (`{words.group(0) if words else plain(said.text)[:60]}`) "
                 f"place the stop after training had begun, and the paste holds no step row, so where the run was is "
                 f"not in it.")
    else:
        where = "The paste starts at that line, so where the run was (start-up or which step) is not in it."
    msg = (f"torch's launcher received {sig} ({SIGNAL_SENDERS[sig]}) and shut its workers down: the run was stopped "
           f"from outside, not by an error of its own. {where}")
    fix = ["Run the job detached from the terminal (nohup, tmux or screen, or the cluster's scheduler) so that closing "
           "the session does not stop it, and resume from the last saved checkpoint."
           if sig == "SIGHUP" else
           "If nobody stopped it on purpose, paste the lines before the signal: the last progress line says whether "
           "the run was stuck; then resume from the last saved checkpoint."]
    return msg, fix, [Evidence(line.where.path, line.where.line, line.raw)]


def signal_message_and_fix(line: LogLine, sig: str, phase: str | None) -> tuple[str, list[str], list[Evidence]]:
    where = f"while {STARTUP_WHERE[phase]}" if phase else "before the first training step"
    msg = (f"torch's launcher received {sig} ({SIGNAL_SENDERS[sig]}) "
           f"and shut its workers down {where}. No training step was logged before it, and a run stopped by hand in "
           f"start-up usually sat there without progress; the log shows no error before it, and how long it waited is "
           f"not in the excerpt.")
    fix = list(STARTUP_FIX[phase]) if phase else [
        "Next time take `py-spy dump --pid <pid>` of each worker while it sits there (or run it under `grpo-doctor "
        "watch`, which takes them): the stack says which start-up step never finishes."]
    return msg, fix, [Evidence(line.where.path, line.where.line, line.raw)]


def message_and_fix(exc: ExceptionInfo, phase: str) -> tuple[str, list[str], list[Evidence]]:
    inner = exc.frames[-1]
    msg = (f"The process was stopped by hand (KeyboardInterrupt) while {STARTUP_WHERE[phase]}: its stack ends at "
           f"{inner.path}:{inner.lineno} in {inner.func}. No training step was logged before it, "
           f"and a Ctrl-C in start-up code usually means the run sat there without progress. The log shows no error "
           f"before it; how long it waited is not in the excerpt.")
    return msg, list(STARTUP_FIX[phase]), [Evidence(exc.where.path, exc.where.line, exc.raw)]
