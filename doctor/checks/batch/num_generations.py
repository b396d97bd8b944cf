"""GD103: num_generations below 2 (a group of one has no advantage); the fix names group sizes that divide this
run's generation batch."""
from __future__ import annotations

from math import gcd

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.batch import divisors, nearest
from ...values import as_int
from .._numbers import assumptions, computed
from .._runargs import gen_batch


def num_generations_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    run = ctx.run
    g = as_int(hits[0].groups.get("g")) or run.int_arg("num_generations")
    n_, b_, s_, gbs_ = gen_batch(run)
    n, b, s, gbs = n_.value, b_.value, s_.value, gbs_.value
    why = assumptions(("world size", n_), ("per_device_train_batch_size", b_), ("gradient_accumulation_steps", s_))
    shown = g if g is not None else "<2"
    msg = (f"num_generations is {shown}: GRPO normalises each reward against the other completions of the same "
           f"prompt, so a group needs at least 2 (the advantage of a group of 1 is always 0).")
    cands = [d for d in divisors(gbs) if d >= 2]
    fix = []
    flags: tuple[tuple[str, str], ...] = ()
    if cands:
        flags = (("--num_generations", str(min(cands, key=lambda v: (abs(v - 8), -v)))),)
        fix.append(f"--num_generations {' or '.join(map(str, nearest(cands, 8)))} (divisors of the generation "
                   f"batch {n_} x {b_} x {s_} = {gbs_}){why}; 4 to 16 is usual.")
        if max(cands) < 4:
            b4 = b * 4 // gcd(gbs, 4)
            fix.append(f"For groups of 4: --num_generations 4 --per_device_train_batch_size {b4} "
                       f"({n_} x {b4} x {s_} = {computed(n * b4 * s, n_, s_)} completions per generation step){why}.")
    else:
        flags = (("--num_generations", "4"), ("--per_device_train_batch_size", "4"))
        fix.append(f"--num_generations 4 with --per_device_train_batch_size 4 (the generation batch "
                   f"world size x batch x steps_per_generation = {gbs_} must be a multiple of it){why}.")
    mm = run.swift_major_minor
    if mm is None or mm >= (4, 4):
        fix.append("For on-policy distillation with a single sample per prompt, ms-swift >= 4.4 allows "
                   "num_generations 1 only together with --teacher_model.")
    return Diagnosis(message=msg, fix=tuple(fix), flags=flags)
