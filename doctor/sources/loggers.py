"""The run's own loggers as sources: TensorBoard event files, wandb run folders, SwanLab's local console logs.

What is read (nothing is executed, unpickled or loaded whole):
- ``runs/events.out.tfevents.*`` (``--report_to tensorboard``): scalar summaries, streamed (sources/tfevents.py);
- ``wandb/run-*/`` and ``wandb/offline-run-*/``: ``files/output.log`` (the console, read as a console log when
  the run directory holds no other), ``files/wandb-summary.json`` (the last logged values), ``files/
  wandb-metadata.json`` (the command line: program and args), ``files/config.yaml`` (the trainer arguments, used
  when there is no args.json). Skipped and named: the binary ``run-*.wandb`` log (protobuf records);
  wandb's own ``logs/debug*.log`` are not inputs;
- ``swanlog/**/console/*.log``: SwanLab's copy of the console, treated as wandb's output.log;
- ``trainer_state.json`` (transformers' Trainer: trl and ms-swift runs): its ``log_history``, streamed
  (sources/trainer_state.py); the run's own, else the last checkpoint's (sources/inputs.py). Not read at all when an
  earlier source gave step rows without a step number (trl's printed dicts: the same rows, nothing to match them by).

No step is counted twice: the metric rows of these files are fed after the logs and logging.jsonl, and a row whose
step an earlier source already gave (the StepLedger of the session) is left out. A console copy (wandb output.log,
SwanLab console) is read only when the run directory holds no other console log.
"""
from __future__ import annotations

import json
import shlex
from typing import Any

from ..signals import Metrics, Where
from . import metrics as msrc
from .kinds import LOGGER_KINDS as KINDS  # noqa: F401
from .kinds import WANDB_BINARY_NOTE, is_event_file, is_swanlab_console, logger_kind, wandb_kind  # noqa: F401


# ------------------------------------------------------------------------------------------------- the step ledger
class StepLedger:
    """The steps the session has been given (a session observer): later sources leave them out."""

    def __init__(self) -> None:
        self.steps: set[int] = set()
        self.stepless = 0   # step rows without a step number (a trl console dict): nothing to match a later row by

    def __call__(self, signal: Any) -> None:
        if isinstance(signal, Metrics) and msrc.is_step(signal.values):
            s = step_of(signal.values)
            if s is not None:
                self.steps.add(s)
            else:
                self.stepless += 1


def step_of(values: dict[str, Any]) -> int | None:
    s = msrc.step_number(values)
    if s is None:
        v = values.get("step")
        if isinstance(v, float) and v == v and abs(v) < 1 << 62:
            s = int(v)
    return s


# ------------------------------------------------------------------------------------------------- feeding
def feed(inp, session, counter: list[int], ledger: StepLedger | None, notes: dict[str, str]) -> None:
    """Stream one logger input into the session. ``notes``: what was skipped in it, by display path."""
    from .inputs import open_input, read_small
    if inp.kind == "tensorboard":
        from . import tfevents
        skipped: set[str] = set()
        dup = 0
        with open_input(inp) as stream:
            for rec, values in tfevents.rows(stream, skipped):
                if _emit_row(session, values, Where(inp.display, rec), counter, ledger, "tensorboard"):
                    continue
                dup += 1
        bits = []
        if dup:
            bits.append(f"{dup} row(s) of steps another source already gave, not counted twice")
        if skipped:
            bits.append(", ".join(sorted(skipped)) + " summaries")
        if bits:
            notes[inp.display] = "; ".join(bits)
        return
    if inp.kind == "trainer-state":
        _feed_trainer_state(inp, session, counter, ledger, notes)
        return
    text = read_small(inp)
    if inp.kind == "wandb-summary":
        obj = _json(text)
        if obj is None:
            return
        values = summary_row(obj)
        if values and not _emit_row(session, values, Where(inp.display, 1), counter, ledger, "wandb"):
            notes[inp.display] = "its last step, which another source already gave (not counted twice)"
    elif inp.kind == "wandb-meta":
        obj = _json(text)
        if obj is not None:
            cmd = command_line(obj)
            if cmd:
                session.run.add_command(cmd, "command")
    elif inp.kind == "wandb-config":
        args = read_config_yaml(text)
        if args:
            session.run.add_args_json(args)


def _feed_trainer_state(inp, session, counter: list[int], ledger: StepLedger | None, notes: dict[str, str]) -> None:
    """The log_history of a trainer_state.json (sources/trainer_state.py), a row per logged step; left out: the steps
    an earlier source gave, and the whole file when an earlier source gave step rows without a step number (a
    console log of transformers' printed dicts holds the same rows, with nothing to match them by)."""
    from . import trainer_state
    from .inputs import open_input
    if ledger is not None and ledger.stepless:
        notes[inp.display] = (f"not read: the {ledger.stepless} metric row(s) of the console log are the same steps "
                              "without step numbers (no row counted twice)")
        return
    bits: list[str] = []
    dup = kept = 0
    with open_input(inp) as stream:
        for lineno, values, finite in trainer_state.rows(stream, bits):
            if ledger is not None and msrc.is_step(values):
                s = step_of(values)
                if s is not None and s in ledger.steps:
                    dup += 1
                    continue
            counter[0] += 1
            kept += 1
            session.emit(Metrics(values, Where(inp.display, lineno), counter[0], "trainer_state", finite))
    if dup:
        bits.insert(0, f"{dup} row(s) of steps another source already gave, not counted twice")
    if bits:
        notes[inp.display] = "; ".join(bits)


def _emit_row(session, values: dict[str, Any], where: Where, counter: list[int], ledger: StepLedger | None,
              source: str) -> bool:
    """Emit a row unless its step was already given; False when left out."""
    if ledger is not None and msrc.is_step(values):
        s = step_of(values)
        if s is not None and s in ledger.steps:
            return False
    counter[0] += 1
    session.emit(Metrics(values, where, counter[0], source))
    return True


def _json(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def summary_row(obj: dict[str, Any]) -> dict[str, Any]:
    """wandb-summary.json as a metrics row: 'train/loss' -> loss, the step from train/global_step (else _step)."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if not isinstance(k, str) or isinstance(v, (dict, list, bool)) or v is None:
            continue
        if k.startswith("train/"):
            out[k[len("train/"):]] = msrc.to_number(v)
        elif k.startswith("eval/"):
            out["eval_" + k[len("eval/"):]] = msrc.to_number(v)
    step = out.pop("global_step", None)
    if not isinstance(step, float):
        step = msrc.to_number(obj.get("_step")) if "_step" in obj else None
    if isinstance(step, float) and step == step:
        out["step"] = step
    return {k: v for k, v in out.items() if isinstance(v, float)}


def command_line(meta: dict[str, Any]) -> str:
    """The command of wandb-metadata.json: ``python PROGRAM ARGS`` (swift's CLI scripts are read as swift)."""
    program, args = meta.get("program"), meta.get("args")
    if not isinstance(program, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return ""
    return "python " + shlex.join([program, *args])


def read_config_yaml(text: str) -> dict[str, Any]:
    """The scalar arguments of wandb's config.yaml (``key:`` then an indented ``value: X``); nested values and
    wandb's own ``_wandb`` block are left out. A small reader of that one layout, not a YAML parser."""
    out: dict[str, Any] = {}
    key: str | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            key = line[:-1] if line.endswith(":") and not line.startswith("_") else None
            continue
        s = line.strip()
        if key and line.startswith("  ") and not line.startswith("   ") and s.startswith("value:"):
            raw = s[len("value:"):].strip()
            if raw:
                out[key] = _scalar(raw)
            key = None
    return {k: v for k, v in out.items() if v is not _NESTED}


_NESTED = object()


def _scalar(raw: str) -> Any:
    if raw in ("null", "~"):
        return None
    if raw in ("true", "false"):
        return raw == "true"
    if raw[:1] in "[{|>":
        return _NESTED
    if raw[:1] in "'\"" and raw[-1:] == raw[:1] and len(raw) >= 2:
        return raw[1:-1].replace("''", "'") if raw[0] == "'" else raw[1:-1]
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw
