"""``grpo-doctor preflight``: judge a ``swift rlhf`` command before any GPU time.

The command becomes a RunConfig exactly as ms-swift would read it (doctor/sources/swiftcmd.py). Then the
argument checks ms-swift runs while parsing (unknown flags -> ``remaining_argv``, the batch divisibility of
the target version, num_generations < 2, load_args force-loading ``tuner_type`` from an ``args.json``) are
simulated: each produces the very line that ms-swift would print, and that line goes through the same
catalog rules as a real log (GD401, GD101-GD103, GD701), so preflight and ``analyze`` give the same
diagnosis and the same computed fix. Config-only rules (GPU layout, sampling, lengths, MAX_PIXELS, disk,
the memory plan) read the RunConfig and the facts gathered here (model config.json, GPU memory).
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import __version__
from .checks.args._swift_fields import RLHF_FIELDS_4_6
from .checks.rewards.funcs_not_set import no_reward_configured
from .engine import Session
from .model import InputInfo, Report
from .registry import load_catalog
from .selectors import resolve
from .signals import GpuSnapshot, LogLine, Where
from .sources import gpu as gpu_src
from .sources.swiftcmd import CommandError, SwiftCommand, flag_values, parse_command, read_json, read_model_dir
from .sources.swiftconfig import Launch, RunConfig
from .swift.flags import REMOVED_IN
from .swift.version import major_minor
from .values import as_int

PATH = "<preflight>"


# ------------------------------------------------------------------------------------------ the version

def installed_swift() -> str | None:
    try:
        return importlib.metadata.version("ms-swift")
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001
        return None


def known_fields(version: str | None) -> tuple[frozenset[str] | None, str]:
    """The argument names of ``swift rlhf`` for this version, and where they came from.

    4.6.x: the committed list (dataclasses.fields(RLHFArguments) of ms-swift 4.6.0). Another installed version:
    its own dataclass fields (imports swift.arguments: slow, seconds). Not installed: the 4.6 list."""
    if version is None or version.startswith("4.6"):
        return RLHF_FIELDS_4_6, "ms-swift 4.6.0 argument table" + ("" if version else " (ms-swift not installed here)")
    if installed_swift() != version:
        return None, f"grpo-doctor's flag tables of renamed and removed flags (ms-swift {version} is not installed here)"
    try:
        from swift.arguments import RLHFArguments  # type: ignore  # noqa: PLC0415
        return frozenset(f.name for f in dataclasses.fields(RLHFArguments)), f"installed ms-swift {version}"
    except Exception:  # noqa: BLE001
        try:
            from swift.llm import RLHFArguments  # type: ignore  # noqa: PLC0415  (3.x)
            return frozenset(f.name for f in dataclasses.fields(RLHFArguments)), f"installed ms-swift {version}"
        except Exception:  # noqa: BLE001
            return None, "unknown"


# --------------------------------------------------------------------------------- simulated ms-swift checks

def _divs(n: int, start: int) -> list[int]:
    from .swift.batch import divisors  # bounded: the numbers come from the user's command
    return divisors(n, start)


def eval_enabled(run: RunConfig, mm: tuple[int, int] | None) -> bool:
    a = run.args
    if str(a.get("eval_strategy", "")).lower() == "no":
        return False
    val = a.get("val_dataset")
    if val not in (None, [], "", False):
        return True
    ratio = a.get("split_dataset_ratio")
    if ratio is None:
        ratio = 0.01 if (mm is not None and mm < (3, 6)) else 0.0  # split_dataset_ratio 0.01 -> 0 in 3.6
    try:
        return float(ratio) > 0
    except (TypeError, ValueError):
        return False


def predicted_lines(run: RunConfig, mm: tuple[int, int] | None) -> list[str]:
    """The argument errors ms-swift of this version raises for this configuration (swift-notes §1.1), in its words."""
    if str(run.get("rlhf_type", "")).lower() != "grpo":
        return []
    a = run.args
    n = run.world_size() or 1
    b = as_int(a.get("per_device_train_batch_size"), floats=True) or 1
    eb = as_int(a.get("per_device_eval_batch_size"), floats=True) or 1
    g = as_int(a.get("num_generations"), floats=True)
    g = 8 if g is None else g
    ga = as_int(a.get("gradient_accumulation_steps"), floats=True)
    if ga is None:
        ga = max(1, math.ceil(16 / b / n)) if (mm is not None and (3, 4) <= mm < (3, 7)) else 1
    spg = as_int(a.get("steps_per_generation"), floats=True)
    gbs = as_int(a.get("generation_batch_size"), floats=True)
    teacher = bool(a.get("teacher_model") or a.get("teacher_model_server"))
    ev = eval_enabled(run, mm)
    out: list[str] = []
    v = mm or (9, 9)  # unknown: the newest behaviour
    if v >= (4, 2):
        gb = b * n
        if gbs is None and spg is None:
            spg = ga
            gbs = gb * spg
        elif gbs is not None and spg is None:
            if gbs % gb:
                return [f"ValueError: generation_batch_size ({gbs}) must be divisible by the global batch size ({gb})."]
        elif gbs is None:
            gbs = gb * spg
        elif gbs != gb * spg:
            return [f"ValueError: generation_batch_size ({gbs}) must equal per_device_train_batch_size * world_size * "
                    f"steps_per_generation = {gb * spg}."]
        if g < 2 and not teacher and v >= (4, 4):
            return ["ValueError: num_generations must be greater than 1 for GRPO"]
        if g < 2 and v < (4, 4):
            return [f"ValueError: GRPO requires at least 2 generations per prompt to calculate the advantages. You "
                    f"provided {g}, which is less than the minimum required."]
        if g > 1 and gbs % g:
            out.append(f"ValueError: generation_batch_size ({gbs}) must be evenly divisible by num_generations ({g}). "
                       f"Valid values: {_divs(gbs, 2)}.")
        elif g > 1 and ev:
            ge = as_int(a.get("num_generations_eval"), floats=True) or g
            if (n * eb) % ge:
                out.append(f"ValueError: The global eval batch size ({n} x {eb}) must be evenly divisible by "
                           f"num_generations_eval ({ge}). Valid values: {_divs(n * eb, 1)}.")
        return out
    if g < 2:
        return [f"ValueError: GRPO requires at least 2 generations per prompt to calculate the advantages. You "
                f"provided {g}, which is less than the minimum required."]
    if v >= (3, 5):
        s = spg or (gbs // (b * n) if gbs else ga)
        total = n * b * s
        if total % g:
            return [f"ValueError: The effective train batch size ({n} x {b} x {s}) must be evenly divisible by the "
                    f"number of generations per prompt ({g}). Given the current effective train batch size, the "
                    f"valid values for the number of generations are: {_divs(total, 2)}."]
        if ev:
            ge = as_int(a.get("num_generations_eval"), floats=True) if v >= (3, 12) else None
            ge = ge or g
            if (n * eb) % ge:
                what = "the number of generations for eval" if v >= (3, 12) else \
                    "the number of generations per prompt"
                return [f"ValueError: The global eval batch size ({n} x {eb}) must be evenly divisible by {what} "
                        f"({ge}). Given the current global eval batch size, the valid values for the number of "
                        f"generations are: {_divs(n * eb, 2)}."]
        return []
    if v >= (3, 4):
        if (n * b * ga) % g:
            return [f"ValueError: The effective train batch size ({n} x {b} x {ga}) must be evenly divisible by the "
                    f"number of generations per prompt ({g}). Given the current effective train batch size, the valid "
                    f"values for the number of generations are: {_divs(n * b * ga, 2)}."]
        if ev and (n * eb) % g:
            return [f"ValueError: The effective eval batch size ({n} x {eb}) must be evenly divisible by the number "
                    f"of generations per prompt ({g}). Given the current effective eval batch size, the valid values "
                    f"for the number of generations are: {_divs(n * eb, 2)}."]
        return []
    if (n * b) % g:
        return [f"ValueError: The global train batch size ({n} x {b}) must be evenly divisible by the number of "
                f"generations per prompt ({g}). Given the current train batch size, the valid values for the number "
                f"of generations are: {_divs(n * b, 2)}."]
    if ev and (n * eb) % g:
        return [f"ValueError: The global eval batch size ({n} x {eb}) must be evenly divisible by the number of "
                f"generations per prompt ({g}). Given the current eval batch size, the valid values for the number "
                f"of generations are: {_divs(n * eb, 2)}."]
    return []


def unknown_by_tables(cmd: SwiftCommand, mm: tuple[int, int] | None) -> list[tuple[str, list[str]]]:
    """Without that version's dataclass: a flag removed by this version, added after it, or known to no version."""
    from .swift.flags import ADDED, REMOVED
    if mm is None:
        return []
    out = []
    for name, vals in cmd.flags:
        key = name[3:] if name.startswith("no_") and name[3:] in RLHF_FIELDS_4_6 else name
        if key in REMOVED_IN:
            if mm >= REMOVED_IN[key]:
                out.append((name, vals))
        elif key in ADDED and mm < ADDED[key][0]:
            out.append((name, vals))
        elif key not in RLHF_FIELDS_4_6 and key not in REMOVED:
            out.append((name, vals))
    return out


def unknown_flags(cmd: SwiftCommand, fields: frozenset[str] | None) -> list[tuple[str, list[str]]]:
    if fields is None:
        return []
    out = []
    for name, vals in cmd.flags:
        key = name[3:] if name.startswith("no_") and name[3:] in fields else name  # HfArgumentParser --no_<bool>
        if key not in fields:
            out.append((name, vals))
    return out


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("true", "1"))


def load_args_lines(run: RunConfig, mm: tuple[int, int] | None) -> tuple[list[str], dict | None]:
    """With load_args on, ms-swift force-loads tuner_type from the first args.json of --adapters then --model."""
    la = run.cli.get("load_args")
    on = _truthy(la) or (la is None and mm is not None and mm < (3, 2))
    if not on:
        return [], None
    if la is None:
        run.set_arg("load_args", True, "dump")  # the 3.0-3.1 training default the dump would show
    dirs = []
    ad = run.args.get("adapters")
    if isinstance(ad, list):
        dirs += [str(x) for x in ad[:1]]
    elif isinstance(ad, str):
        dirs.append(ad)
    if isinstance(run.args.get("model"), str):
        dirs.append(run.args["model"])
    for d in dirs:
        _, args_json, path = read_model_dir(d)
        if args_json is None:
            continue
        tuner = args_json.get("tuner_type") or args_json.get("train_type")
        if tuner:
            key = "tuner_type" if "tuner_type" in run.cli or (mm or (4, 0)) >= (4, 0) else "train_type"
            run.set_arg(key, tuner, "dump")  # what the args dump of that run will show
        return [f"[INFO:swift] Successfully loaded {path}."], args_json
    return [], None


# ----------------------------------------------------------------------------------------- GPU memory

def gpu_memory(gpu_mem_gib: float | None, snapshot: str | None, visible: str | None,
               live: bool = True) -> tuple[float | None, str, list[gpu_src.GpuSample]]:
    """The memory of one training GPU in GiB, and where it came from."""
    if gpu_mem_gib:
        return float(gpu_mem_gib), "--gpu-mem", []
    samples: list[gpu_src.GpuSample] = []
    src = ""
    if snapshot:
        samples = gpu_src.parse_snapshot(snapshot)
        src = f"snapshot {snapshot}"
    elif live:
        got = gpu_src.sample_nvml()
        if got:
            samples, src = got, "NVML (live)"
    if visible and samples:
        ids = [x.strip() for x in visible.split(",") if x.strip()]
        chosen = [s for s in samples if (s.index is not None and str(s.index) in ids) or (s.uuid and s.uuid in ids)]
        samples = chosen or samples
    totals = [s.mem_total_mib for s in samples if s.mem_total_mib]
    if not totals:
        return None, src or "unknown", samples
    return min(totals) / 1024, src, samples


# ------------------------------------------------------------------------------------------- the driver

def build_run(cmd: SwiftCommand, version: str | None) -> RunConfig:
    run = RunConfig()
    run.command = cmd.subcommand or "rlhf"
    run.env.update(cmd.env)
    run.torchrun.update(cmd.torchrun)
    flags = flag_values(cmd)
    for k, v in flags.items():
        run.cli[k] = v
        run.set_arg(k, v, "command")
    run.launches.append(Launch(run.command, dict(cmd.inline_env), flags))
    if version:
        run.versions["ms-swift"] = version
        mm = major_minor(version)
        run.major_hint = mm[0] if mm else None
    run.command_texts.append(cmd.text[:200_000])
    return run


def preflight_command(argv: list[str], env: Mapping[str, str] | None = None, *, gpu_mem_gib: float | None = None,
                      gpu_snapshot: str | None = None, select: set[str] | None = None,
                      ignore: set[str] | None = None, swift_version: str | None = None,
                      live_gpu: bool = True, cwd: Path | None = None) -> Report:
    """Judge a ``swift rlhf`` command line (argv without the leading ``--``). Raises CommandError (exit 2)."""
    cmd = parse_command(argv, env, cwd)
    version = swift_version or installed_swift()
    rep = _judge(cmd, version, gpu_mem_gib, gpu_snapshot, select, ignore, live_gpu,
                 [InputInfo(PATH if not cmd.config_file else cmd.config_file, "command")])
    if cmd.config_file is None:   # a --config file's flags stay in the file: no command line to rewrite
        from .preflight_relaunch import one_command

        def judge(again: list[str]) -> Report:
            return _judge(parse_command(again, env, cwd), version, gpu_mem_gib, gpu_snapshot, select, ignore,
                          live_gpu, [])
        fixed = one_command(rep, argv, judge, version)
        if fixed is not None:
            rep.run.setdefault("preflight", {})["relaunch"] = fixed
    return rep


def preflight_args_json(path: str, *, gpu_mem_gib: float | None = None, gpu_snapshot: str | None = None,
                        select: set[str] | None = None, ignore: set[str] | None = None,
                        swift_version: str | None = None, live_gpu: bool = True) -> Report:
    """Judge the arguments of an ``args.json`` (as written by ms-swift, or written by hand)."""
    obj = read_json(Path(path))
    if not isinstance(obj, dict):
        raise CommandError(f"{path}: an args.json holds one JSON object of arguments")
    argv: list[str] = []
    for k, v in obj.items():
        if v is None or k.startswith("_"):
            continue
        argv.append(f"--{k}")
        if isinstance(v, list):
            argv += [str(x) for x in v]
        elif isinstance(v, dict):
            import json as _json
            argv.append(_json.dumps(v))
        else:
            argv.append(str(v))
    cmd = parse_command(argv, {})
    version = swift_version or (obj.get("swift_version") if isinstance(obj.get("swift_version"), str) else None) \
        or installed_swift()
    # an args.json is a dump of every field: unknown names there come from another version, not from a typo
    return _judge(cmd, version, gpu_mem_gib, gpu_snapshot, select, ignore, live_gpu, [InputInfo(path, "args")],
                  check_flags=False)


def _judge(cmd: SwiftCommand, version: str | None, gpu_mem_gib: float | None, gpu_snapshot: str | None,
           select: set[str] | None, ignore: set[str] | None, live_gpu: bool, inputs: list[InputInfo],
           check_flags: bool = True) -> Report:
    from .settings import GPU_MEM_RANGE, gpu_mem_ok
    if gpu_mem_gib is not None and not gpu_mem_ok(gpu_mem_gib):  # every caller: the CLI, watch, the MCP tool
        raise CommandError(f"--gpu-mem {gpu_mem_gib}: give the memory of one training GPU as {GPU_MEM_RANGE}")
    run = build_run(cmd, version)
    mm = major_minor(version)
    facts: dict[str, Any] = {"swift_version": version}
    fields, fields_src = known_fields(version)
    facts["fields_source"] = fields_src
    lines: list[str] = []
    if check_flags:
        unknown = unknown_flags(cmd, fields) if fields is not None else unknown_by_tables(cmd, mm)
        if unknown:
            shown = []
            for name, vals in unknown:
                shown += [f"--{name}"] + vals
            lines.append(f"ValueError: remaining_argv: {shown!r}")
    lines += predicted_lines(run, mm)
    if mm is not None and mm < (4, 4) and no_reward_configured(run):  # 4.4+: GD611 judges the command itself
        lines.append("ValueError: You must specify reward_funcs or reward_model")
    la_lines, la_args = load_args_lines(run, mm)
    lines += la_lines
    model = run.args.get("model") if isinstance(run.args.get("model"), str) else None
    cfg, model_args, _ = read_model_dir(model)
    facts["model_config"] = cfg
    facts["model_args_json"] = model_args or la_args
    gib, gsrc, samples = gpu_memory(gpu_mem_gib, gpu_snapshot, run.env.get("CUDA_VISIBLE_DEVICES"), live_gpu)
    facts["gpu_gib"] = gib
    facts["gpu_source"] = gsrc
    sel = resolve(load_catalog(), select, ignore)
    session = Session(sel.run, run=run, preflight=True, facts=facts)
    for i, text in enumerate(lines, 1):
        session.feed_line(LogLine(text, text, Where(PATH, i), None, i))
    if samples:   # a saved snapshot, or the live NVML sample: other jobs' memory on the GPUs is judged either way
        where = gpu_snapshot or "<nvml>"
        session.emit(GpuSnapshot(where, samples, len(lines) + 1))
        inputs = inputs + [InputInfo(where, "gpu")]
    findings = sel.keep(session.finish())
    summary = run.summary()
    summary["preflight"] = {"swift_version_checked": version, "flags_checked_against": fields_src,
                            "gpu_memory_gib": round(gib, 2) if gib else None, "gpu_memory_source": gsrc}
    return Report(__version__, inputs, summary, findings)
