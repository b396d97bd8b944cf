"""Project defaults: ``[tool.grpo-doctor]`` in a pyproject.toml (or the top level of a file named by --config).

    [tool.grpo-doctor]
    select = ["ALL"]          # rule ids, id prefixes, slugs or categories (as --select)
    ignore = ["GD644"]        # as --ignore
    fail-on = "warning"       # warning | error | never
    gpu-mem = 80              # GiB of one training GPU (preflight)
    format = "text"           # text | json | markdown | sarif | github

The file is found by walking up from the run directory (the first PATH; a file's folder) and then from the
current directory; the first pyproject.toml holding a ``[tool.grpo-doctor]`` table wins. ``--config FILE``
names it instead; ``--isolated`` reads none. An option given on the command line replaces the file's value.
"""
from __future__ import annotations

import difflib
import math
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FORMATS = ("text", "json", "markdown", "sarif", "github")
FAIL_ON = ("warning", "error", "never")
KEYS = ("select", "ignore", "fail-on", "gpu-mem", "format")
# GiB of one GPU: above 0 (nan, inf and negatives gave plans against "nan GiB"), at most far beyond any GPU made
GPU_MEM_MAX = 4096
GPU_MEM_RANGE = f"a number of GiB between 0 and {GPU_MEM_MAX} (e.g. 80)"


def gpu_mem_ok(value: object) -> bool:
    """Whether ``value`` can be the memory of one GPU in GiB (finite, above 0, at most GPU_MEM_MAX)."""
    return (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            and 0 < value <= GPU_MEM_MAX)


class SettingsError(ValueError):
    """A configuration file that cannot be used; the message is the CLI's one line."""


def _table(path: Path, explicit: bool) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SettingsError(f"{path}: cannot read the configuration ({e.strerror}); check --config") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"{path}: not valid TOML ({e}); fix the file or pass --isolated") from None
    table = data.get("tool", {}).get("grpo-doctor") if isinstance(data.get("tool"), dict) else None
    if table is None and explicit and path.name != "pyproject.toml":
        table = data  # a grpo-doctor.toml of its own: the keys at the top level
    if table is not None and not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.grpo-doctor] must be a table")
    return table


def _strings(path: Path, key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{path}: {key} must be a list of rule ids, prefixes, slugs or categories")
    return value


def validate(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    """The table's values, checked, under the CLI's parameter names (fail_on, gpu_mem...)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        k = key.replace("_", "-")
        if k not in KEYS:
            close = difflib.get_close_matches(k, KEYS, n=1)
            hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(KEYS)})"
            raise SettingsError(f"{path}: unknown key {key!r} in [tool.grpo-doctor]{hint}")
        if k in ("select", "ignore"):
            out[k] = _strings(path, k, value)
        elif k == "gpu-mem":
            if not gpu_mem_ok(value):
                raise SettingsError(f"{path}: gpu-mem must be {GPU_MEM_RANGE}, not {value!r}")
            out["gpu_mem"] = float(value)
        else:
            allowed = FORMATS if k == "format" else FAIL_ON
            if value not in allowed:
                raise SettingsError(f"{path}: {k} must be one of {', '.join(allowed)}, not {value!r}")
            out[k.replace("-", "_")] = value
    return out


def find(starts: list[Path]) -> tuple[Path, dict[str, Any]] | None:
    """The first pyproject.toml with a [tool.grpo-doctor] table above each start, in order."""
    seen: set[Path] = set()
    for start in starts:
        try:
            d = start.resolve()
        except OSError:
            continue
        if not d.is_dir():
            d = d.parent
        for folder in (d, *d.parents):
            if folder in seen:
                break
            seen.add(folder)
            f = folder / "pyproject.toml"
            if f.is_file():
                table = _table(f, explicit=False)
                if table is not None:
                    return f, table
    return None


def load(paths: list[str] | None, config: str | None = None, isolated: bool = False) -> dict[str, Any]:
    """The project defaults for a command run on ``paths`` (CLI parameter names), {} when there are none."""
    if isolated:
        return {}
    if config:
        p = Path(config)
        if not p.is_file():
            raise SettingsError(f"{config}: no such configuration file; check --config")
        table = _table(p, explicit=True)
        if table is None:
            raise SettingsError(f"{config}: no [tool.grpo-doctor] table in it")
        return validate(p, table)
    starts = [Path(p) for p in paths or () if p != "-" and Path(p).exists()][:1] + [Path.cwd()]
    got = find(starts)
    return validate(*got) if got else {}


def merge(given: dict[str, Any], found: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Command line over file over default, per option (None or empty: not given)."""
    return {k: given[k] if given.get(k) not in (None, [], ()) else found.get(k, defaults.get(k))
            for k in set(given) | set(defaults)}


__all__ = ["FAIL_ON", "FORMATS", "GPU_MEM_RANGE", "KEYS", "SettingsError", "find", "gpu_mem_ok", "load", "merge", "validate"]
