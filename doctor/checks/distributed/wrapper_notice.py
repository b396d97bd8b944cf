"""GD312: a wrapper's report of a failure whose cause is elsewhere (Hydra's run_and_report, Ray's RayTaskError, a
launcher's CalledProcessError): say which wrapper, what it does tell (the wrapped type, the exit status), and where
the cause is printed."""
from __future__ import annotations

from dataclasses import replace

from ... import lazyre
from ...classify.structure import CONSEQUENCES
from ...classify.wrappers import CATEGORY_OF_TYPE
from ...model import Evidence
from ...rules import Diagnosis, Hit
from ._elastic import SIGNALS

# exceptions that are a wrapper's own report of a child's failure (torch/multiprocessing/spawn.py)
_WRAPPER_TYPES = frozenset({"ProcessRaisedException", "ProcessExitedException"})
_SIGNAL_MEANS = {
    "SIGKILL": "killed with SIGKILL, which without a Python traceback is most often the host's out-of-memory killer "
               "(check `dmesg` or `journalctl -k` for 'Out of memory: Killed process')",
    "SIGTERM": "stopped with SIGTERM (a scheduler's time limit, a preemption, or a launcher stopping it after another "
               "process failed)",
    "SIGSEGV": "ended by a crash in native code (SIGSEGV)",
    "SIGABRT": "aborted in native code (SIGABRT: a C++ exception or a failed check, printed just before)",
    "SIGBUS": "ended by a bus error (SIGBUS: often /dev/shm too small for DataLoader workers or NCCL)",
    "SIGINT": "interrupted (SIGINT)",
}


# a build step run as a subprocess (torch's cpp_extension runs ninja; setup scripts run cmake/make): its failure is the
# compiler's, printed above, not a training process's (GD458 reads it)
_BUILD_TOOL = lazyre.compile(r"""^['"]?\[?['"]?(?:\S*/)?(?:ninja|cmake|make|nvcc|g\+\+|gcc|c\+\+)['"]?(?:[,\s\]]|$)""")


def wrapper_fix(hits: list[Hit], ctx) -> Diagnosis | None:
    """The wrapper's notice; when a person's words in the paste (an issue's title, a sentence) name the failure the
    wrapper did not print, their symptom is the reading, at possible, with that line as the first evidence."""
    diag = _wrapper_fix(hits, ctx)
    if diag is None:
        return None
    from ..hang.prose import meanwhile_for, symptom_in
    got = symptom_in(ctx.tails.values())
    typed = CATEGORY_OF_TYPE.get(hits[0].groups.get("inner") or "")
    if typed and (got is None or got[0][0] != typed):
        # Ray names the wrapped exception's type (`RayTaskError(ImportError)`): that type places the failure, likely,
        # before any description's words
        return replace(diag, category=typed, confidence="likely")
    if got is None or got[0][0].startswith("hang"):
        return diag
    said, lines = got
    line = said[2]
    cause, meanwhile = meanwhile_for(ctx, said[0], said[1], lines)
    return replace(diag, category=said[0], confidence="possible",
                   message=(diag.message or "") + f" The words of the paste say {said[1]} (`{line.text.strip()[:160]}`): "
                           f"that is the reading, from the description, until the exception itself is pasted."
                           + (f" {cause}" if cause else ""),
                   fix=(*diag.fix, *([meanwhile] if meanwhile else [])),
                   evidence=(Evidence(line.where.path, line.where.line, line.raw), *diag.evidence))


def _wrapper_fix(hits: list[Hit], ctx) -> Diagnosis | None:
    # the log holds a real exception besides the wrapper's: the rules that read it speak, and "the cause is not in
    # this log" would be false
    if any(e.short_type not in CONSEQUENCES and not e.short_type.startswith("RayTaskError")
           and e.short_type not in _WRAPPER_TYPES for e in ctx.exceptions):
        return None
    g = hits[0].groups
    if _BUILD_TOOL.match(g.get("cmd") or ""):
        return None
    if "vllm.model_executor.models.registry" in (g.get("cmd") or ""):
        return None  # vLLM's registry inspects a model class in a subprocess of its own (GD241 reads its failure)
    if g.get("overrides") is not None:
        return Diagnosis(
            message="Hydra's run_and_report caught the job's exception and printed only `Error executing job with "
                    "overrides`; without HYDRA_FULL_ERROR=1 it shortens the stack, and no exception line after it "
                    "was read from this log.",
            fix=("Rerun with HYDRA_FULL_ERROR=1 in the environment (export HYDRA_FULL_ERROR=1) to get the full stack, "
                 "and paste the exception line printed after `Error executing job with overrides`.",))
    if g.get("ray_bare") is not None:
        inner = f" (`{g['inner']}`)" if g.get("inner") else ""
        return Diagnosis(
            message=f"Ray re-raised a remote task's exception{inner} in the driver as RayTaskError, and the paste stops "
                    f"there: the task's own traceback and exception line, which the worker prints with a `(pid=N, "
                    f"ip=...)` or `(TaskRunner pid=N)` prefix, are the cause and were not read.",
            fix=("Paste the worker's lines (those with the `(... pid=N)` prefix, above or below the driver's "
                 "traceback) or its log under /tmp/ray/session_latest/logs/ (worker-*.err): the exception there is "
                 "the failure.",))
    if g.get("task"):
        if any(line.seq > hits[0].seq for line, _ in ctx.open_tracebacks):
            return None  # the task's own frames follow, cut before their exception line: the cut reading speaks
        inner = f"`{g['inner']}`" if g.get("inner") else "an exception"
        return Diagnosis(
            message=f"Ray re-raised {inner} from the remote task {g['task']}() as RayTaskError: the exception itself, "
                    f"with the task's own traceback, is printed after the `ray::{g['task']}()` header (often with a "
                    f"`(name pid=N)` prefix) and is the cause.",
            fix=("Read the exception line and the frames under the RayTaskError header (or the task's log under "
                 "/tmp/ray/session_latest/logs/) and analyze those lines.",))
    if "sp_rank" in g or "sp_status" in g or "sp_signal" in g:
        return _spawn(g)
    if g.get("ds_status") is not None:
        return _deepspeed_launcher(int(g["ds_status"]))
    status, signal = g.get("status"), g.get("signal")
    if signal is None and status and status.startswith("-"):   # CPython: a negative returncode is the signal
        signal = SIGNALS.get(int(status))
    if signal:
        return Diagnosis(
            message=f"A launcher's child process (subprocess.CalledProcessError) {_ended(signal, None)}; the launcher "
                    f"reports only how the child ended, not why.",
            fix=("Look for the child's last lines (its own log or the lines above this one) and the kernel log; "
                 "for SIGKILL, lower host memory use (fewer DataLoader workers, offload less to CPU) or give the job "
                 "more RAM.",) if signal == "SIGKILL" else
                ("Look for the child's last lines (its own log or the lines above this one): the cause is printed "
                 "there.",))
    if _SSH_PROBE.match(g.get("cmd") or ""):
        return _ssh_probe(g["cmd"], status)
    return Diagnosis(
        message=f"A launcher ran the training as a subprocess, and it exited with status {status or '?'} "
                f"(subprocess.CalledProcessError): the child's own traceback, printed before this line, is the cause.",
        fix=("Scroll up to the child's own exception (its last `Traceback (most recent call last):` block) and "
             "analyze that part of the log.",))


# a multi-node launcher's reachability probe run before any training process (DeepSpeed launcher/runner.py main:
# `ssh -o PasswordAuthentication=no <host> hostname` through subprocess.check_call, for every host of the hostfile)
_SSH_PROBE = lazyre.compile(r"^\[?['\"]?(?:ssh|pdsh)\b")


def _ssh_probe(cmd: str, status: str | None) -> Diagnosis:
    """The command that failed is an SSH probe of another host: no training process ran; ssh's own failures exit 255
    (OpenSSH ssh(1): "ssh exits with the exit status of the remote command or with 255 if an error occurred")."""
    own = " (255: ssh's own failure, not a command on the host)" if status == "255" else ""
    cmd = cmd.strip("[]'\" ")
    return Diagnosis(
        message=f"The launcher's SSH check of another host failed before any training process started: `{cmd[:120]}` "
                f"exited with status {status or '?'}{own}. The host is unreachable from this node or does not accept "
                f"password-less (key) login.",
        fix=("From the node that launches, `ssh -o PasswordAuthentication=no <host> hostname` must print the host's "
             "name for every host in the hostfile: set up key-based login (ssh-keygen, ssh-copy-id, the same user), "
             "or start each node with its own launch command instead of one launcher over SSH.",))


def _deepspeed_launcher(status: int) -> Diagnosis:
    """DeepSpeed's launcher (launcher/launch.py sigkill_handler) logs the first rank that ended badly, with Popen's
    returncode (negative: the signal), then kills the other ranks: its line is how the run ended, not why."""
    how = _ended(SIGNALS.get(status) if status < 0 else None, status)
    return Diagnosis(
        message=f"DeepSpeed's launcher reports that a training process {how} (`exits with return code = {status}`) "
                f"and then stopped the other ranks; the launcher's line says how that process ended, not why.",
        fix=("Scroll up to that rank's own last lines (its `Traceback (most recent call last):` block, or an error "
             "printed just before the launcher's `Killing subprocess` lines) and analyze that part of the log.",))


def _spawn(g: dict) -> Diagnosis:
    """torch.multiprocessing.spawn: the parent re-raises a child's failure (torch/multiprocessing/spawn.py)."""
    signal, status = g.get("sp_signal"), g.get("sp_status")
    if not signal and status is None:
        return Diagnosis(
            message="torch.multiprocessing.spawn re-raised a child process's exception (ProcessRaisedException): the "
                    "child's own traceback is printed after its `-- Process N terminated with the following error:` "
                    "line and is the cause.",
            fix=("Read the traceback under `-- Process N terminated with the following error:` (or the child's own "
                 "log) and analyze those lines.",))
    how = _ended(signal, int(status) if status is not None else None)
    return Diagnosis(
        message=f"torch.multiprocessing.spawn reports that child process {g.get('sp_rank') or '?'} {how} "
                f"(ProcessExitedException); the parent says how the child ended, not why.",
        fix=("Look for that child's last lines above this one (its own error, or nothing at all for a kill from "
             "outside: then `dmesg -T | grep -i oom` on the node).",))


def _ended(signal: str | None, status: int | None) -> str:
    """How a child ended, as a launcher reports it: by a named signal, by a signal number (a negative status), or with
    an exit status."""
    if signal:
        return f"was {_SIGNAL_MEANS.get(signal, f'ended by {signal}')}"
    if status is not None and status < 0:
        return f"ended by signal {-status}"
    return f"exited with status {status}"
