"""Batch arithmetic of GRPO: every completion batch must hold whole groups of num_generations.

Train (swift-notes §1.1): generation_batch_size = world_size x per_device_train_batch_size x
steps_per_generation (steps_per_generation defaults to gradient_accumulation_steps; ms-swift 3.1-3.3
and trl 0.15-0.16 count only world_size x per_device_train_batch_size). Eval: world_size x
per_device_eval_batch_size must be divisible by num_generations (num_generations_eval from 3.12).
"""
from __future__ import annotations

from math import gcd

from ...rules import Diagnosis, FinishContext, Hit
from ...swift.batch import divisors, multiples_around, nearest
from ...swift.run import flag_in_version
from ...values import as_int


def train_fix(hits: list[Hit], ctx: FinishContext) -> Diagnosis | None:
    run = ctx.run
    g0 = hits[0].groups
    g = as_int(g0.get("g")) or run.int_arg("num_generations")
    n = as_int(g0.get("n")) or run.world_size() or 1
    b = as_int(g0.get("b")) or run.int_arg("per_device_train_batch_size") or 1
    s = as_int(g0.get("s"))
    gbs = as_int(g0.get("gbs"))
    global_only = "global train batch size" in hits[0].evidence.text  # 3.1-3.3 / trl 0.15-0.16 wording
    ga_flag = "gradient_accumulation_steps"
    spg_explicit = run.cli.get("steps_per_generation") is not None
    mult_flag = "steps_per_generation" if (spg_explicit and flag_in_version(run, "steps_per_generation")) else ga_flag
    if s is None and not global_only:
        if gbs and n and b and gbs % (n * b) == 0:
            s = gbs // (n * b)
        else:
            s = run.int_arg("steps_per_generation") or run.int_arg("gradient_accumulation_steps") or 1
    if global_only:
        s = 1
    if gbs is None:
        gbs = n * b * s
    fix: list[str] = []
    explicit_gbs = g0.get("gb") is not None or g0.get("expected") is not None
    if g0.get("expected") is not None:
        exp = as_int(g0["expected"])
        msg = (f"generation_batch_size {gbs} was set together with steps_per_generation, and they disagree: "
               f"per_device_train_batch_size x world_size x steps_per_generation = {exp}.")
        fix.append(f"Set only one of them: drop --generation_batch_size, or drop --steps_per_generation and keep "
                   f"--generation_batch_size {gbs} (a multiple of {n * b} and of num_generations {g}).")
        return Diagnosis(message=msg, fix=tuple(fix))
    if g0.get("gb") is not None:
        gb = as_int(g0["gb"]) or n * b
        msg = (f"generation_batch_size {gbs} is not a multiple of the global batch size {gb} "
               f"(world size {n} x per_device_train_batch_size {b}).")
        step = gb * g // gcd(gb, g) if g else gb
        fix.append(f"Use --generation_batch_size {' or '.join(map(str, multiples_around(gbs, step)))} "
                   f"(multiples of both the global batch {gb} and num_generations {g or '?'}), or drop it and set "
                   f"--steps_per_generation instead.")
        return Diagnosis(message=msg, fix=tuple(fix))
    if not g:
        return Diagnosis()
    if global_only:
        arith = f"world size {n} x per_device_train_batch_size {b} = {gbs} completions per step"
    else:
        arith = (f"world size {n} x per_device_train_batch_size {b} x {mult_flag} {s} = {gbs} completions "
                 f"per generation step")
    msg = (f"{arith}, which is not a multiple of num_generations {g}: GRPO needs whole groups of {g} "
           f"completions of the same prompt in every generation batch.")
    fix.append(f"{arith}; {gbs} % {g} = {gbs % g}.")
    valid_g = divisors(gbs)
    if valid_g:
        fix.append(f"--num_generations {' or '.join(map(str, nearest(valid_g, g)))} (divisors of {gbs}; "
                   f"at least 4 keeps the advantage estimate stable).")
    if not global_only:
        step_s = g // gcd(n * b, g)
        opts = [v for v in multiples_around(s, step_s)]
        fix.append(f"--{mult_flag} {' or '.join(map(str, opts))} "
                   f"(gives {' / '.join(str(n * b * v) for v in opts)} completions, divisible by {g}).")
    step_b = g // gcd(n * s, g)
    opts_b = multiples_around(b, step_b)
    fix.append(f"--per_device_train_batch_size {' or '.join(map(str, opts_b))} "
               f"(gives {' / '.join(str(n * v * s) for v in opts_b)} completions).")
    if global_only:
        fix.append("In this version gradient accumulation does not count toward the group: only world size x "
                   "per_device_train_batch_size must be a multiple of num_generations (ms-swift >= 3.4 and "
                   "trl >= 0.17 also count gradient_accumulation_steps).")
    if explicit_gbs or run.cli.get("generation_batch_size") is not None:
        step = (n * b) * g // gcd(n * b, g)
        fix.append(f"--generation_batch_size {' or '.join(map(str, multiples_around(gbs, step)))}.")
    # the command line keeps num_generations (the group size chosen) and takes the first value offered
    flags = ((f"--{mult_flag}", str(opts[0])),) if not global_only and opts else \
        (("--per_device_train_batch_size", str(opts_b[0])),) if opts_b else ()
    return Diagnosis(message=msg, fix=tuple(fix), flags=flags)


def eval_fix(hits: list[Hit], ctx: FinishContext) -> Diagnosis | None:
    run = ctx.run
    g0 = hits[0].groups
    if g0.get("size") is not None:  # eval_dataset size N is smaller than total_eval_batch_size M
        size, total = as_int(g0["size"]), as_int(g0["total"])
        n = run.world_size()
        msg = (f"The eval split holds {size} prompt(s) but one eval step needs {total} "
               f"(world size x per_device_eval_batch_size / num_generations).")
        fix = []
        if size == 0:
            fix.append("The eval dataset is empty: pass --val_dataset, or --split_dataset_ratio 0.01 or more; "
                       "if evaluation runs elsewhere (evalscope), update ms-swift (the check was fixed upstream) "
                       "or set --eval_strategy no.")
        else:
            fix.append(f"Provide at least {total} eval prompts (--val_dataset or a larger --split_dataset_ratio), "
                       "or lower --per_device_eval_batch_size.")
        if n:
            fix.append(f"World size here is {n}.")
        return Diagnosis(message=msg, fix=tuple(fix))
    if g0.get("expected") is not None:  # Expected 32 inputs, got 4
        exp, got = as_int(g0["expected"]), as_int(g0["got"])
        b = run.int_arg("per_device_train_batch_size")
        ga = run.int_arg("gradient_accumulation_steps")
        eb = run.int_arg("per_device_eval_batch_size")
        msg = (f"A batch of {got} inputs reached a step that expects {exp} "
               f"(per_device batch x gradient_accumulation_steps). This assert fires in evaluation when the eval "
               f"batch does not match the train batch geometry (ms-swift 3.x _prepare_batch_inputs).")
        fix = []
        if b and ga:
            fix.append(f"per_device_train_batch_size {b} x gradient_accumulation_steps {ga} = {b * ga}; "
                       f"per_device_eval_batch_size is {eb if eb else 'unset (1)'}.")
        if eb and b and eb == b:
            # already equal: the assert wants per_device batch x GA items, which an eval batch never holds
            fix.append("The eval batch already equals the train batch, so this ms-swift 3.x eval path cannot pass "
                       "with gradient_accumulation_steps > 1: turn evaluation off (--eval_strategy no, or "
                       "--split_dataset_ratio 0 when the eval split is carved from the training data) and upgrade "
                       "ms-swift (later 3.x releases fixed the eval batch path).")
        else:
            fix.append("Set --per_device_eval_batch_size equal to per_device_train_batch_size, or turn evaluation "
                       "off (--eval_strategy no) and upgrade ms-swift (later 3.x releases fixed the eval batch path).")
        return Diagnosis(message=msg, fix=tuple(fix))
    g = as_int(g0.get("g")) or run.int_arg("num_generations_eval") or run.int_arg("num_generations")
    n = as_int(g0.get("n")) or run.world_size() or 1
    b = as_int(g0.get("b")) or run.int_arg("per_device_eval_batch_size") or 1
    if not g:
        return Diagnosis()
    total = n * b
    msg = (f"Global eval batch = world size {n} x per_device_eval_batch_size {b} = {total}, not a multiple of "
           f"the eval num_generations {g}.")
    fix = [f"world size {n} x per_device_eval_batch_size {b} = {total}; {total} % {g} = {total % g}."]
    step = g // gcd(n, g)
    opts = multiples_around(b, step)
    fix.append(f"--per_device_eval_batch_size {' or '.join(map(str, opts))} "
               f"(gives {' / '.join(str(n * v) for v in opts)}, divisible by {g}).")
    geval = "num_generations_eval" if flag_in_version(run, "num_generations_eval") else "num_generations"
    valid = divisors(total, 2 if geval == "num_generations" else 1)
    if valid:
        fix.append(f"--{geval} {' or '.join(map(str, nearest(valid, g)))}"
                   + (" (eval only; training keeps its num_generations)." if geval == "num_generations_eval"
                      else " (also changes training)."))
    mm = run.swift_major_minor
    if mm is not None and mm < (3, 6) and run.args.get("val_dataset") in (None, [], ""):
        fix.append("Or disable evaluation: this version carves 1% of the data for eval by default "
                   "(--split_dataset_ratio 0 turns it off).")
    else:
        fix.append("Or disable evaluation: --eval_strategy no (and drop --val_dataset).")
    return Diagnosis(message=msg, fix=tuple(fix))
