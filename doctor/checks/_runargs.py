"""Run-config lookups that the fixes of the metric rules (rules/rewards/, rules/numerics/, rules/outputs/)
share: a float flag, the generation batch, and a --num_generations change that keeps it divisible.

A helper of the checks package, not of one family.
"""
from __future__ import annotations

from ..sources.swiftconfig import RunConfig
from ._numbers import Num, assumptions, computed, read_or
from ._series import num


def arg_float(run: RunConfig, key: str) -> float | None:
    v = run.args.get(key)
    if isinstance(v, bool):
        return None
    return num(v) if v is not None else None


def gen_batch(run: RunConfig) -> tuple[Num[int], Num[int], Num[int], Num[int]]:
    """world size x per_device_train_batch_size x steps_per_generation (else gradient_accumulation_steps) and
    their product, each read from the run or assumed (1, the default when the run leaves it out)."""
    n = read_or(run.world_size(), 1)
    b = read_or(run.int_arg("per_device_train_batch_size"), 1)
    s = read_or(run.int_arg("steps_per_generation") or run.int_arg("gradient_accumulation_steps"), 1)
    return n, b, s, computed(n.value * b.value * s.value, n, b, s)


def more_generations(run: RunConfig, g: int | None, target: int | None = None) -> str:
    """'--num_generations 8' plus, if needed, the batch change that keeps the generation batch divisible
    (gradient_accumulation_steps, or steps_per_generation when the run sets it; per-device batch in 3.1-3.3).
    ``g`` None: the run's num_generations is not known (8, the usual value, is assumed and said)."""
    g_ = read_or(g, 8)
    if target is None:
        target = 8 if g_.value < 8 else g_.value * 2
    n_, b_, s_, gbs_ = gen_batch(run)
    n, b, s, gbs = n_.value, b_.value, s_.value, gbs_.value
    mm = run.swift_major_minor
    old = mm is not None and mm < (3, 4)
    flag = "steps_per_generation" if run.cli.get("steps_per_generation") is not None else "gradient_accumulation_steps"
    why = assumptions(("num_generations", g_), ("world size", n_), ("per_device_train_batch_size", b_),
                      *(() if old else ((flag, s_),)))
    if gbs % target == 0:
        return f"--num_generations {target} (generation batch {n_} x {b_} x {s_} = {gbs_} stays divisible){why}"
    if old:
        nb = b
        while (n * nb) % target and nb < 64 * max(1, b):
            nb += b
        return (f"--num_generations {target} with --per_device_train_batch_size {nb} (world size {n_} x {nb} = "
                f"{computed(n * nb, n_)}, a multiple of {target}){why}")
    ns = s
    while (n * b * ns) % target and ns < 64 * max(1, s):
        ns += s
    return (f"--num_generations {target} with --{flag} {ns} (world size {n_} x per_device_train_batch_size {b_} x "
            f"{ns} = {computed(n * b * ns, n_, b_)}, a multiple of {target}){why}")
