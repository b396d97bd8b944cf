"""Run-config lookups that the fixes of the metric rules (rules/rewards/, rules/numerics/, rules/outputs/)
share: a float flag, the generation batch, and a --num_generations change that keeps it divisible.

A helper of the checks package, not of one family.
"""
from __future__ import annotations

from ..sources.swiftconfig import RunConfig
from ._series import num


def arg_float(run: RunConfig, key: str) -> float | None:
    v = run.args.get(key)
    if isinstance(v, bool):
        return None
    return num(v) if v is not None else None


def gen_batch(run: RunConfig) -> tuple[int, int, int, int]:
    n = run.world_size() or 1
    b = run.int_arg("per_device_train_batch_size") or 1
    s = run.int_arg("steps_per_generation") or run.int_arg("gradient_accumulation_steps") or 1
    return n, b, s, n * b * s


def more_generations(run: RunConfig, g: int, target: int | None = None) -> str:
    """'--num_generations 8' plus, if needed, the batch change that keeps the generation batch divisible
    (gradient_accumulation_steps, or steps_per_generation when the run sets it; per-device batch in 3.1-3.3)."""
    if target is None:
        target = 8 if g < 8 else g * 2
    n, b, s, gbs = gen_batch(run)
    if gbs % target == 0:
        return f"--num_generations {target} (generation batch {n} x {b} x {s} = {gbs} stays divisible)"
    mm = run.swift_major_minor
    if mm is not None and mm < (3, 4):
        nb = b
        while (n * nb) % target and nb < 64 * max(1, b):
            nb += b
        return (f"--num_generations {target} with --per_device_train_batch_size {nb} (world size {n} x {nb} = "
                f"{n * nb}, a multiple of {target})")
    flag = "steps_per_generation" if run.cli.get("steps_per_generation") is not None else "gradient_accumulation_steps"
    ns = s
    while (n * b * ns) % target and ns < 64 * max(1, s):
        ns += s
    return (f"--num_generations {target} with --{flag} {ns} (world size {n} x per_device_train_batch_size {b} x "
            f"{ns} = {n * b * ns}, a multiple of {target})")
