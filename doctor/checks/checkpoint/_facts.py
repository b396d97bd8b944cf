"""Pure helpers shared by the checkpoint rules (GD801-GD805): what a checkpoint holds, what the run meant
to save, sizes by part. Everything reads ``CheckpointFacts``; nothing does I/O."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...signals import CheckpointInput
from ...sources.swiftconfig import RunConfig

if TYPE_CHECKING:   # the checkpoint reader (with shutil, bz2, lzma, struct: ~10 M instructions) comes with a checkpoint
    from ...sources.checkpoint import CheckpointFacts

LORA_TYPES = ("lora", "longlora", "adalora", "qlora", "dora", "loha", "lokr", "vera", "boft", "bone", "reft")


def fmt_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{int(n):,} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def fmt_params(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    return f"{n:,}"


def kind(f: CheckpointFacts) -> str | None:
    """'full' (model weights), 'adapter' (only adapter weights), 'deepspeed' (only global_stepN/), or None."""
    if f.weight_files():
        return "full"
    if f.adapter_files():
        return "adapter"
    if f.deepspeed_tags:
        return "deepspeed"
    return None


def tuner_value(v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    t = v.strip().strip("'\"").lower()
    if t == "full":
        return "full"
    if t in LORA_TYPES:
        return "lora"
    return None


def run_config(f: CheckpointFacts, run: RunConfig | None) -> RunConfig:
    """The run's configuration: the one given (analyze, watch), completed from the checkpoint's args.json and
    the command found in the run directory."""
    rc = RunConfig()
    if f.command_text:
        rc.add_command(f.command_text, "command")
    if isinstance(f.args, dict):
        rc.add_args_json(f.args)
    if run is not None:
        for k, v in run.args.items():
            rc.set_arg(k, v, run.provenance.get(k, "command"))
        for k, v in run.cli.items():
            rc.cli[k] = v
        rc.versions.update(run.versions)
        rc.major_hint = run.major_hint or rc.major_hint
    return rc


def intent(inp: CheckpointInput, run: RunConfig | None) -> tuple[str | None, str]:
    """What the run was meant to save, and why we think so."""
    if inp.expect in ("full", "lora"):
        return inp.expect, f"--expect {inp.expect}"
    for src, cli in (("the command line", run.cli if run is not None else {}), ):
        for key in ("tuner_type", "train_type"):
            t = tuner_value(cli.get(key))
            if t:
                return t, f"{src} says --{key} {cli.get(key)}"
    f = inp.facts
    if f.command_text:
        rc = RunConfig()
        rc.add_command(f.command_text, "command")
        for key in ("tuner_type", "train_type"):
            t = tuner_value(rc.cli.get(key))
            if t:
                where = f"{f.run_dir}/{f.command_source}" if f.run_dir else f.command_source
                return t, f"the command in {where} says --{key} {rc.cli.get(key)}"
    return None, ""


def swift_version(args: dict[str, Any] | None) -> str | None:
    v = args.get("swift_version") if isinstance(args, dict) else None
    return str(v) if v else None


@dataclass
class Parts:
    """A checkpoint's bytes by part: weights, optimizer states and the rest."""
    weights: int = 0
    optimizer: int = 0
    ds_model: int = 0
    other: int = 0
    weight_dtype: str | None = None  # dominant stored dtype of the weights
    params: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.optimizer + self.ds_model + self.other


def parts(f: CheckpointFacts) -> Parts:
    p = Parts()
    weights = set(f.weight_files()) | set(f.adapter_files())
    by_dtype: dict[str, int] = {}
    for name, ff in f.files.items():
        if ff.link is not None:
            continue
        base = name.rsplit("/", 1)[-1]
        if name in weights:
            p.weights += ff.size
            h = f.headers.get(name)
            if h is not None and h.ok:
                p.params += h.numel
                for dt, b in h.dtypes().items():
                    by_dtype[dt] = by_dtype.get(dt, 0) + b
        elif base == "optimizer.pt" or "optim_states" in base:
            p.optimizer += ff.size
        elif "/" in name and "model_states" in base:
            p.ds_model += ff.size
        else:
            p.other += ff.size
    if by_dtype:
        p.weight_dtype = max(by_dtype, key=by_dtype.get)
    return p


DTYPE_WIDTH = {"F32": 4, "BF16": 2, "F16": 2, "F64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
CONFIG_TO_ST = {"float32": "F32", "bfloat16": "BF16", "float16": "F16", "torch.float32": "F32",
                "torch.bfloat16": "BF16", "torch.float16": "F16"}


def base_dtype(f: CheckpointFacts) -> tuple[str | None, str]:
    """The base model's dtype and where it was read."""
    from ...sources.checkpoint import config_dtype
    d = config_dtype(f.base_config)
    if d:
        return CONFIG_TO_ST.get(d, d), "the base model's config.json"
    return None, ""


def expected_full_params(f: CheckpointFacts) -> tuple[int | None, str]:
    from ...sources.checkpoint import expected_params
    n = expected_params(f.json("config.json"))
    if n:
        return n, "config.json"
    n = expected_params(f.base_config)
    if n:
        return n, "the base model's config.json"
    return None, ""


KIND_TEXT = {"full": "full weights", "adapter": "adapter", "deepspeed": "DeepSpeed shards only", None: "no weights"}


def inventory(f: CheckpointFacts) -> dict[str, Any]:
    """What check-ckpt checked in one checkpoint, for the report of a checkpoint that passes: its kind, parameters and
    bytes, the weights' dtype, whether every safetensors header parsed, whether optimizer state is there, its step."""
    p = parts(f)
    k = kind(f)
    state = f.json("trainer_state.json")
    step = state.get("global_step") if isinstance(state, dict) else None
    return {"path": f.path, "kind": k or "none", "params": p.params or None, "bytes": f.total_bytes(),
            "dtype": p.weight_dtype, "headers_ok": all(h.ok for h in f.headers.values()) if f.headers else None,
            "optimizer": p.optimizer > 0, "step": step if isinstance(step, int) else f.step}


def inventory_line(inv: dict[str, Any]) -> str:
    """'checkpoint-2: full weights, 102,976 params, 412.4 kB, F16, safetensors headers OK, optimizer state present,
    step 2', each part only when the checkpoint shows it."""
    name = inv["path"].rstrip("/").rsplit("/", 1)[-1] or inv["path"]
    bits = [KIND_TEXT.get(inv["kind"], inv["kind"])]
    if inv["params"]:
        bits.append(f"{fmt_params(inv['params'])} params")
    bits.append(fmt_bytes(inv["bytes"]))
    if inv["dtype"]:
        bits.append(inv["dtype"])
    if inv["headers_ok"] is not None:
        bits.append("safetensors headers OK" if inv["headers_ok"] else "a safetensors header is broken")
    bits.append("optimizer state present" if inv["optimizer"] else "no optimizer state")
    if inv["step"] is not None:
        bits.append(f"step {inv['step']}")
    return f"{name}: " + ", ".join(bits)


def newest_per_run(inputs: list[CheckpointInput]) -> list[list[CheckpointInput]]:
    """Checkpoints grouped by run directory (each group sorted by step, newest last)."""
    groups: dict[str, list[CheckpointInput]] = {}
    for i in inputs:
        groups.setdefault(i.facts.run_dir or i.facts.path, []).append(i)
    return [sorted(g, key=lambda i: (i.facts.step if i.facts.step is not None else -1, i.facts.path))
            for g in groups.values()]
