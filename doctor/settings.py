"""Project defaults: ``[tool.grpo-doctor]`` in a pyproject.toml (or the top level of a file named by --config).

    [tool.grpo-doctor]
    select = ["ALL"]          # rule ids, id prefixes, slugs or categories (as --select)
    ignore = ["GD644"]        # as --ignore
    fail-on = "warning"       # warning | error | never
    gpu-mem = 80              # GiB of one training GPU (preflight)
    format = "text"           # text | json | markdown | sarif | github

Where it comes from, as ruff does: ``--config FILE``; else the first pyproject.toml holding a ``[tool.grpo-doctor]``
table in the current directory or above it; else the user's ``$XDG_CONFIG_HOME/grpo-doctor/config.toml``
(``~/.config/grpo-doctor/config.toml``, the keys at its top level). Never from the analysed input's tree: a run
folder copied from elsewhere (or anything under /tmp) could silence every rule and set fail-on = never, turning a
crash into exit 0 in CI. ``--isolated`` reads none. An option given on the command line replaces the file's value.
A file is read only when regular and at most MAX_CONFIG bytes (a sparse 1 GiB pyproject took 2 GiB of memory);
anything wrong with it is one SettingsError line.
"""
from __future__ import annotations

import difflib
import math
import os
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


MAX_CONFIG = 1 << 20  # bytes; a pyproject.toml is a few KB


def _text(path: Path, hint: str) -> str:
    from .sources.safeio import NotRegular, open_regular
    try:
        with open_regular(path) as f:  # never a FIFO or a device: nothing makes the command wait
            raw = f.read(MAX_CONFIG + 1)
    except NotRegular as e:
        raise SettingsError(f"{path}: {e.what}, not a configuration file; {hint}") from None
    except OSError as e:
        raise SettingsError(f"{path}: cannot read the configuration ({e.strerror}); {hint}") from None
    if len(raw) > MAX_CONFIG:
        raise SettingsError(f"{path}: larger than {MAX_CONFIG >> 20} MiB, not a configuration file; {hint}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SettingsError(f"{path}: not valid TOML ({e}); {hint}") from None


def _table(path: Path, explicit: bool) -> dict[str, Any] | None:
    hint = "check --config" if explicit else "fix the file, or pass --config FILE or --isolated"
    text = _text(path, hint)
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as e:  # RecursionError: arrays nested thousands deep
        raise SettingsError(f"{path}: not valid TOML ({str(e)[:120] or type(e).__name__}); {hint}") from None
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


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a folder we may not search, a name too long: no file there for us
        return False


def find_project(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The first pyproject.toml with a [tool.grpo-doctor] table in ``start`` (the working directory) or above."""
    try:
        d = (start or Path.cwd()).resolve()
    except OSError:  # the working directory was removed
        return None
    for folder in (d, *d.parents):
        f = folder / "pyproject.toml"
        if _is_file(f):
            table = _table(f, explicit=False)
            if table is not None:
                return f, table
    return None


def user_config() -> Path:
    """The user's own defaults: $XDG_CONFIG_HOME/grpo-doctor/config.toml (else ~/.config/...)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "grpo-doctor" / "config.toml"


def load(config: str | None = None, isolated: bool = False) -> tuple[Path | None, dict[str, Any]]:
    """The configuration file used (None: none) and its defaults under the CLI parameter names. The analysed
    inputs play no part: only --config, the current project, then the user's file."""
    if isolated:
        return None, {}
    if config:
        p = Path(config)
        table = _table(p, explicit=True)
        if table is None:
            raise SettingsError(f"{config}: no [tool.grpo-doctor] table in it; check --config")
        return p, validate(p, table)
    got = find_project()
    if got is None and _is_file(user_config()):
        table = _table(user_config(), explicit=True)
        got = (user_config(), table) if table is not None else None
    return (got[0], validate(*got)) if got else (None, {})


def merge(given: dict[str, Any], found: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """Command line over file over default, per option (None or empty: not given)."""
    return {k: given[k] if given.get(k) not in (None, [], ()) else found.get(k, defaults.get(k))
            for k in set(given) | set(defaults)}


__all__ = ["FAIL_ON", "FORMATS", "GPU_MEM_RANGE", "KEYS", "SettingsError", "find_project", "gpu_mem_ok", "load", "merge",
           "user_config", "validate"]
