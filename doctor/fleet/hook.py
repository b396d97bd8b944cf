"""The hook: read the finished job, find its logs, analyse them with bounds, write its record. Returns 0 whatever
happens (a slurmd Epilog that exits non-zero drains the node); what went wrong goes into the record, or to standard
error (Slurm's log of the hook) when not even a record can be written.

Settings come from flags or a TOML file (``--config``, else /etc/grpo-doctor/fleet.toml when it exists): a hook's
environment is empty and ``Epilog=`` takes a path without arguments, so a cluster points it at a two-line wrapper
script (README, "On a cluster")."""
from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field

from .diagnose import Limits, Outcome, run_analysis
from .locate import locate
from .record import build, write
from .slurm import read_job

DEFAULT_CONFIG = "/etc/grpo-doctor/fleet.toml"
# a job that ended like this was not a failure: no record unless every job is asked for
SUCCESS_STATES = ("COMPLETED",)


class ConfigError(Exception):
    pass


@dataclass
class HookOptions:
    store: str | None = None
    limits: Limits = field(default_factory=Limits)
    all_jobs: bool = False


def load_options(store: str | None, config: str | None, timeout: float | None, memory_mb: int | None,
                 max_log_mb: int | None, all_jobs: bool) -> HookOptions:
    """Flags over the config file over the defaults. ConfigError for an unreadable or wrong config file."""
    values: dict = {}
    path = config or (DEFAULT_CONFIG if store is None and os.path.isfile(DEFAULT_CONFIG) else None)
    if path:
        try:
            import tomllib
        except ImportError:   # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            with open(path, "rb") as f:
                values = tomllib.load(f)
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: {getattr(e, 'strerror', None) or e}")
        unknown = set(values) - {"store", "timeout", "memory_mb", "max_log_mb", "all_jobs"}
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    lim = Limits()
    try:
        lim.seconds = float(timeout if timeout is not None else values.get("timeout", lim.seconds))
        lim.memory_mb = int(memory_mb if memory_mb is not None else values.get("memory_mb", lim.memory_mb))
        mb = max_log_mb if max_log_mb is not None else values.get("max_log_mb")
        if mb is not None:
            lim.log_bytes = int(mb) << 20
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{path or 'options'}: {e}")
    if lim.seconds <= 0 or lim.memory_mb <= 0 or lim.log_bytes <= 0:
        raise ConfigError("timeout, memory_mb and max_log_mb must be > 0")
    return HookOptions(store=store or values.get("store"), limits=lim, all_jobs=all_jobs or bool(values.get("all_jobs")))


class _Terminated(Exception):
    pass


def _on_term(signum, frame):   # Slurm's kill of a slow hook: leave through the clean-up (no temporary file left)
    raise _Terminated()


def say(msg: str) -> None:
    try:
        print(f"grpo-doctor fleet: {msg}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def slurm_hook(job_id: str | None, source: str, opts: HookOptions, env: dict[str, str] | None = None) -> int:
    """``job_id`` None: the job in the environment (an epilog); else that job (a follow-up job). Always 0."""
    t0 = time.monotonic()
    env = dict(os.environ if env is None else env)
    signal.signal(signal.SIGTERM, _on_term)
    job = None
    try:
        if not opts.store:
            say(f"no store: pass --store DIR or set store in {DEFAULT_CONFIG}; nothing recorded")
            return 0
        try:   # before the analysis: a store that cannot be written is said at once, in one line
            os.makedirs(opts.store, exist_ok=True)
            if not os.access(opts.store, os.W_OK | os.X_OK):
                raise PermissionError(13, "permission denied")
        except OSError as e:
            say(f"store {opts.store}: {e.strerror or e}; nothing recorded")
            return 0
        job = read_job(job_id, env)
        if not job.job_id:
            say("no job id (SLURM_JOB_ID is not set and none was given); nothing recorded")
            return 0
        if job.state in SUCCESS_STATES and not opts.all_jobs:
            return 0
        located = locate(job.stdout, job.stderr, job.work_dir, job.command)
        outcome = run_analysis(located.paths, opts.limits, job.uid, job.gid)
        rec = build(job, source, outcome, located)
        path = write(opts.store, rec, outcome.report)
        cat = (rec["primary"] or {}).get("category") or "no finding"
        say(f"job {job.job_id} {job.state}: {cat} -> {path} ({time.monotonic() - t0:.2f} s)")
    except BaseException as e:  # noqa: BLE001 - the hook must not fail: record the error instead
        why = "terminated" if isinstance(e, _Terminated) else f"{type(e).__name__}: {e}"
        say(f"job {job_id or env.get('SLURM_JOB_ID')}: {why}")
        if job is not None and opts.store and not isinstance(e, _Terminated):
            try:
                write(opts.store, build(job, source, Outcome("error", time.monotonic() - t0, error=why)), None)
            except BaseException as e2:  # noqa: BLE001
                say(f"cannot write the record either: {e2}")
    return 0


def k8s_hook(log_path: str, exit_file: str | None, exit_code: int | None, wait_s: float, opts: HookOptions,
             env: dict[str, str] | None = None) -> int:
    """The sidecar: wait for the trainer's exit code (``exit_file``) or take ``exit_code``, then record the pod
    when it failed. Always 0 (the pod's own status is the trainer's)."""
    import tempfile

    from . import k8s
    from .locate import Located
    env = dict(os.environ if env is None else env)
    signal.signal(signal.SIGTERM, _on_term)
    try:
        if not opts.store:
            say(f"no store: pass --store DIR or set store in {DEFAULT_CONFIG}; nothing recorded")
            return 0
        if exit_file:
            if not k8s.wait_for(exit_file, wait_s):
                say(f"no exit code at {exit_file} after {wait_s:g} s; recording the pod as UNKNOWN")
            exit_code = k8s.read_exit(exit_file)
        if exit_code == 0 and not opts.all_jobs:
            return 0
        log, facts = k8s.pod_log(log_path)
        job = k8s.pod_job(env, facts, exit_code, log)
        with tempfile.TemporaryDirectory(prefix="grpo-doctor-k8s-") as tmp:
            read = log
            if k8s.is_cri(log):
                read = os.path.join(tmp, os.path.basename(log))
                first, last = k8s.decri(log, read)
                job.start, job.end, job.run_seconds = first, last, k8s.seconds_between(first, last)
            outcome = run_analysis([read], opts.limits)
        if outcome.report is not None and read != log:   # evidence names the pod's log, not the plain copy
            _rename_paths(outcome.report, read, log)
        rec = build(job, "k8s-sidecar", outcome, Located(paths=[log]))
        path = write(opts.store, rec, outcome.report)
        cat = (rec["primary"] or {}).get("category") or "no finding"
        say(f"pod {job.job_id} {job.state}: {cat} -> {path}")
    except BaseException as e:  # noqa: BLE001 - a sidecar that fails would mark the pod failed for the wrong reason
        say(f"pod log {log_path}: {'terminated' if isinstance(e, _Terminated) else f'{type(e).__name__}: {e}'}")
    return 0


def _rename_paths(report: dict, old: str, new: str) -> None:
    for item in report.get("inputs") or []:
        if item.get("path") == old:
            item["path"] = new
    for f in report.get("findings") or []:
        for ev in f.get("evidence") or []:
            if ev.get("path") == old:
                ev["path"] = new
