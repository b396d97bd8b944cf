"""``grpo-doctor fleet ...``: the hooks that record failed jobs, and the view across the records."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from ..cliutil import Command, die

fleet_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="Diagnose every failed job where it ran (Slurm epilog, follow-up job, Kubernetes "
                             "sidecar) into a store of JSON records, and report across them.")


def _store_opt():
    return typer.Option(None, "--store", help="Directory of the records (shared file system). Default: store in "
                        "the config file.")


def _hook_opts(store, config, timeout, memory_mb, max_log_mb, all_jobs):
    from .hook import ConfigError, load_options, say
    try:
        return load_options(store, str(config) if config else None, timeout, memory_mb, max_log_mb, all_jobs)
    except ConfigError as e:   # still exit 0: a hook that fails drains the node
        say(f"config: {e}; nothing recorded")
        raise typer.Exit(0)


_CONFIG_HELP = "TOML file with store, timeout, memory_mb, max_log_mb, all_jobs (default /etc/grpo-doctor/fleet.toml)."


# the hook commands' shared options: one definition each
def _config_opt():
    return typer.Option(None, "--config", help=_CONFIG_HELP)


def _timeout_opt():
    return typer.Option(None, "--timeout", help="Seconds the analysis may take [30].")


def _memory_opt():
    return typer.Option(None, "--memory-mb", help="Address-space limit of the analysis [4096].")


def _max_log_opt():
    return typer.Option(None, "--max-log-mb", help="Larger logs are read in part: head and end [16].")


@fleet_app.command("slurm-epilog", cls=Command)
def slurm_epilog(
    store: Optional[str] = _store_opt(),
    config: Optional[Path] = _config_opt(),
    timeout: Optional[float] = _timeout_opt(),
    memory_mb: Optional[int] = _memory_opt(),
    max_log_mb: Optional[int] = _max_log_opt(),
    all_jobs: bool = typer.Option(False, "--all", help="Record successful jobs too."),
) -> None:
    """For EpilogSlurmctld (or slurmd Epilog): record the job in the hook's environment when it did not complete.
    Always exits 0.

    Examples:

    \b
      EpilogSlurmctld=/etc/slurm/grpo-doctor-epilog   (a script: exec grpo-doctor fleet slurm-epilog --store DIR)
    """
    from .hook import slurm_hook
    raise typer.Exit(slurm_hook(None, "slurm-epilog", _hook_opts(store, config, timeout, memory_mb, max_log_mb,
                                                                  all_jobs)))


@fleet_app.command("slurm-job", cls=Command)
def slurm_job(
    job_id: str = typer.Argument(..., metavar="JOBID", help="The failed job's id."),
    store: Optional[str] = _store_opt(),
    config: Optional[Path] = _config_opt(),
    timeout: Optional[float] = _timeout_opt(),
    memory_mb: Optional[int] = _memory_opt(),
    max_log_mb: Optional[int] = _max_log_opt(),
    all_jobs: bool = typer.Option(False, "--all", help="Record the job even when it completed."),
) -> None:
    """Record job JOBID: for a follow-up job, where users cannot set epilogs. Always exits 0.

    Examples:

    \b
      J=$(sbatch --parsable train.sh)
      sbatch --dependency=afternotok:$J --kill-on-invalid-dep=yes -J doctor --wrap "grpo-doctor fleet slurm-job $J --store DIR"
    """
    from .hook import slurm_hook
    if not job_id.replace("_", "").isdigit():
        from .hook import say
        say(f"{job_id!r} is not a Slurm job id; nothing recorded")
        raise typer.Exit(0)
    raise typer.Exit(slurm_hook(job_id, "slurm-job", _hook_opts(store, config, timeout, memory_mb, max_log_mb,
                                                                 all_jobs)))


@fleet_app.command("k8s-sidecar", cls=Command)
def k8s_sidecar(
    log: str = typer.Option(..., "--log", help="The trainer's log: a file on a shared volume, or the kubelet's "
                            "/var/log/pods/<ns>_<pod>_<uid>/<container>/ folder or file (CRI format)."),
    exit_file: Optional[str] = typer.Option(None, "--exit-file", help="Wait for this file, where the trainer "
                                            "writes its exit code last."),
    exit_code: Optional[int] = typer.Option(None, "--exit-code", help="The trainer's exit code, when known."),
    wait: float = typer.Option(7 * 86400.0, "--wait", help="Seconds to wait for --exit-file."),
    store: Optional[str] = _store_opt(),
    config: Optional[Path] = _config_opt(),
    timeout: Optional[float] = _timeout_opt(),
    memory_mb: Optional[int] = _memory_opt(),
    max_log_mb: Optional[int] = _max_log_opt(),
    all_jobs: bool = typer.Option(False, "--all", help="Record the pod even when the trainer exited 0."),
) -> None:
    """For a sidecar container (or a follow-up Job) on Kubernetes: record the trainer's failure from its log.
    Pod facts come from the Downward API variables POD_NAME, POD_NAMESPACE, NODE_NAME, and JOB_NAME, GPUS,
    CLUSTER_NAME when set. Always exits 0.

    Examples:

    \b
      grpo-doctor fleet k8s-sidecar --log /shared/train.log --exit-file /shared/exit-code --store /store
      grpo-doctor fleet k8s-sidecar --log /var/log/pods/ml_grpo-0_1f2e.../trainer/ --exit-code 1 --store /store
    """
    from .hook import k8s_hook
    raise typer.Exit(k8s_hook(log, exit_file, exit_code, wait, _hook_opts(store, config, timeout, memory_mb,
                                                                          max_log_mb, all_jobs)))


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@fleet_app.command("report", cls=Command)
def report_cmd(
    store: str = typer.Argument(..., metavar="STORE", help="The directory of the records."),
    since: Optional[str] = typer.Option(None, "--since", help="Only records of the last 7d, 12h, 30m, 2w..."),
    fmt: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="text, json or html (one "
                                     "self-contained page)."),
    like: Optional[str] = typer.Option(None, "--like", help="Also list the jobs that failed the same way (same "
                                       "rule) as this job id."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
) -> None:
    """Failures across the store: by category and rule over time, GPU-hours lost, the top recurring failures with
    an example job, the users and partitions most hit.

    Examples:

    \b
      grpo-doctor fleet report /shared/grpo-doctor-fleet --since 7d
      grpo-doctor fleet report /shared/grpo-doctor-fleet --format html -o fleet.html
    """
    from ..cliutil import emit
    from . import render
    from .store import StoreError, load, parse_since
    from .summary import summarize
    try:
        records, problems = load(store, parse_since(since) if since else None)
    except StoreError as e:
        raise die(str(e))
    doc = {"store": store, "since": since, **summarize(records, like), "problems": problems}
    if fmt is ReportFormat.json:
        from ..render.safe import json_dumps
        out = json_dumps(doc, indent=2) + "\n"
    else:
        out = render.page(doc) if fmt is ReportFormat.html else render.text(doc)
    emit(out, output)


@fleet_app.command("compact", cls=Command)
def compact_cmd(
    store: str = typer.Argument(..., metavar="STORE", help="The directory of the records."),
    older_than: str = typer.Option("1d", "--older-than", help="Fold records older than this (7d, 12h, ...): a newer "
                                   "record may still be replaced by a follow-up job."),
) -> None:
    """Fold the store's older records into one Parquet file under STORE/parquet/ (needs DuckDB: pip install
    'grpo-doctor[fleet]'); fleet report reads both.

    Examples:

    \b
      grpo-doctor fleet compact /shared/grpo-doctor-fleet --older-than 7d
    """
    from .compact import compact
    from .store import StoreError, parse_since
    try:
        n, path = compact(store, parse_since(older_than))
    except StoreError as e:
        raise die(str(e))
    except OSError as e:
        raise die(f"{e.filename or store}: {e.strerror}")
    typer.echo(f"folded {n} records into {path}" if n else "nothing older than " + older_than + " to fold")
