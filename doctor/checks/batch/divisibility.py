"""Batch arithmetic of GRPO: every completion batch must hold whole groups of num_generations.

Train (swift-notes §1.1): generation_batch_size = world_size x per_device_train_batch_size x
steps_per_generation (steps_per_generation defaults to gradient_accumulation_steps; ms-swift 3.1-3.3
and trl 0.15-0.16 count only world_size x per_device_train_batch_size). Eval: world_size x
per_device_eval_batch_size must be divisible by num_generations (num_generations_eval from 3.12).
"""
from __future__ import annotations

from math import gcd

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...signals import Where
from ...swift.batch import divisors, multiples_around, nearest
from ...swift.framework import option
from ...swift.run import flag_in_version
from ...values import as_int
from .._numbers import ASSUMED, READ, Num, assumptions, computed, first, show, sure_first


def train_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    run = ctx.run
    g0 = hits[0].groups
    fw = ctx.framework()[0]

    def opt(name: str, values: list[int]) -> str:
        return option(fw, name, values)

    ev = hits[0].evidence
    which = run.runs.index_of(Where(ev.path, ev.line)) if ev.line else None

    def arg(key: str) -> int | None:  # this failure's own run (issue 17.16): the pattern rule's RunState.at
        return as_int(run.args.get(key))

    g = as_int(g0.get("g")) or arg("num_generations")
    n_ = first((as_int(g0.get("n")), READ), (run.world_size(), READ))
    b_ = first((as_int(g0.get("b")), READ), (arg("per_device_train_batch_size"), READ))
    n, b = n_.value, b_.value
    s_in = as_int(g0.get("s"))
    gbs_in = as_int(g0.get("gbs"))
    global_only = "global train batch size" in hits[0].evidence.text  # 3.1-3.3 / trl 0.15-0.16 wording
    ga_flag = "gradient_accumulation_steps"
    spg_explicit = run.cli.get("steps_per_generation") is not None
    mult_flag = "steps_per_generation" if (spg_explicit and flag_in_version(run, "steps_per_generation")) else ga_flag
    if global_only:
        s_ = Num(1, READ)  # this wording counts no accumulation: 1 is the formula, not a guess
    elif s_in is not None:
        s_ = Num(s_in, READ)
    elif (s_cfg := arg("steps_per_generation") or arg("gradient_accumulation_steps")) is not None and \
            gbs_in is not None and n * b * s_cfg == gbs_in:
        s_ = Num(s_cfg, READ)  # the run's configuration, and it agrees with the error
    elif gbs_in and n and b and gbs_in % (n * b) == 0:
        s_ = computed(gbs_in // (n * b), n_, b_)
    else:
        s_ = first((arg("steps_per_generation"), READ), (arg("gradient_accumulation_steps"), READ))
    s = s_.value
    mismatch = gbs_in is not None and n * b * s != gbs_in and not global_only
    if mismatch:
        # the configuration read does not give the batch the error reports (issue 17.16: two runs appended to one
        # log, the config of the other run): never print false arithmetic; keep the read batch, mark the factors
        n_, b_, s_ = Num(n, ASSUMED), Num(b, ASSUMED), Num(s, ASSUMED)
    gbs_ = Num(gbs_in, READ) if gbs_in is not None else computed(n * b * s, n_, b_, s_)
    gbs = gbs_.value
    fix: list[str] = []
    explicit_gbs = g0.get("gb") is not None or g0.get("expected") is not None
    if g0.get("expected") is not None:
        exp = as_int(g0["expected"])
        msg = (f"generation_batch_size {gbs} was set together with steps_per_generation, and they disagree: "
               f"per_device_train_batch_size x world_size x steps_per_generation = {exp}.")
        fix.append(f"Set only one of them: drop generation_batch_size, or drop steps_per_generation and keep "
                   f"{opt('generation_batch_size', [gbs])} (a multiple of {computed(n * b, n_, b_)} and of "
                   f"num_generations {g}).")
        return Diagnosis(message=msg, fix=tuple(fix))
    if g0.get("gb") is not None:
        gb_ = Num(as_int(g0["gb"]), READ) if as_int(g0["gb"]) else computed(n * b, n_, b_)
        gb = gb_.value
        msg = (f"generation_batch_size {gbs} is not a multiple of the global batch size {gb_} "
               f"(world size x per_device_train_batch_size).")
        step = gb * g // gcd(gb, g) if g else gb
        fix.append(f"Use {opt('generation_batch_size', multiples_around(gbs, step))} "
                   f"(multiples of both the global batch {gb} and num_generations {g or '?'}), or drop it and set "
                   f"steps_per_generation instead.")
        return Diagnosis(message=msg, fix=tuple(fix))
    if not g:
        return Diagnosis()
    if global_only:
        arith = f"{show('world size', n_)} x {show('per_device_train_batch_size', b_)} = {gbs_} completions per step"
    else:
        arith = (f"{show('world size', n_)} x {show('per_device_train_batch_size', b_)} x {show(mult_flag, s_)} = "
                 f"{gbs_} completions per generation step")
    msg = (f"{arith}, which is not a multiple of num_generations {g}: GRPO needs whole groups of {g} "
           f"completions of the same prompt in every generation batch.")
    if mismatch:
        arith = f"generation batch {gbs} (from the error message)"
        msg = (f"{arith}, which is not a multiple of num_generations {g}: GRPO needs whole groups of {g} "
               f"completions of the same prompt in every generation batch. The configuration read from the inputs "
               f"(world size {n} x per_device_train_batch_size {b} x {mult_flag} {s} = {n * b * s}) does not give "
               f"{gbs}: it belongs to another run (two runs appended to one log?) or was changed; the values marked "
               f"(assumed) below come from it.")
    elif gbs_.assumed:
        msg += " Values marked (assumed) are not in the log; check them against the run."
    fix.append(f"{arith}; {gbs} % {g} = {gbs % g}.")
    why = "from a configuration that does not give this batch" if mismatch else "not in the log"
    # fixes that need no assumption first: divisors of a generation batch read from the log
    valid_g = divisors(gbs)
    if valid_g:
        fix.append(f"{opt('num_generations', nearest(valid_g, g))} (divisors of {gbs}; "
                   f"at least 4 keeps the advantage estimate stable)"
                   + (assumptions(("world size", n_), ("per_device_train_batch_size", b_), (mult_flag, s_), why=why)
                      if gbs_.assumed else "") + ".")
    if not global_only:
        step_s = g // gcd(n * b, g)
        opts = [v for v in multiples_around(s, step_s)]
        fix.append(f"{opt(mult_flag, opts)} "
                   f"(gives {' / '.join(str(n * b * v) for v in opts)} completions, divisible by {g})"
                   + assumptions(("world size", n_), ("per_device_train_batch_size", b_), why=why) + ".")
    step_b = g // gcd(n * s, g)
    opts_b = multiples_around(b, step_b)
    fix.append(f"{opt('per_device_train_batch_size', opts_b)} "
               f"(gives {' / '.join(str(n * v * s) for v in opts_b)} completions)"
               + assumptions(("world size", n_), (mult_flag, s_), why=why) + ".")
    if global_only:
        fix.append("In this version gradient accumulation does not count toward the group: only world size x "
                   "per_device_train_batch_size must be a multiple of num_generations (trl >= 0.17 also counts "
                   "gradient_accumulation_steps; ms-swift >= 3.4 too).")
    if explicit_gbs or run.cli.get("generation_batch_size") is not None:
        step = (n * b) * g // gcd(n * b, g)
        fix.append(f"{opt('generation_batch_size', multiples_around(gbs, step))}.")
    if which is not None:
        msg += f" ({run.runs.label(which)}: the configuration of that run.)"
    # the corrected command keeps num_generations (the group size chosen) and takes the first value offered. It is
    # the run's own launch command, so a factor it leaves out takes the same default there (world size 1 without a
    # launcher, gradient_accumulation_steps 1); not when the configuration read belongs to another run (mismatch)
    flags: tuple = ()
    if not mismatch:
        flags = ((f"--{mult_flag}", str(opts[0])),) if not global_only and opts else \
            (("--per_device_train_batch_size", str(opts_b[0])),) if opts_b else ()
    return Diagnosis(message=msg, fix=tuple(fix), flags=flags)


def eval_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
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
            fix.append(f"per_device_train_batch_size {b} x gradient_accumulation_steps {ga} = {computed(b * ga)}; "
                       f"per_device_eval_batch_size is {eb if eb else 'unset: 1 (assumed)'}.")
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
    n_ = first((as_int(g0.get("n")), READ), (run.world_size(), READ))
    b_ = first((as_int(g0.get("b")), READ), (run.int_arg("per_device_eval_batch_size"), READ))
    n, b = n_.value, b_.value
    if not g:
        return Diagnosis()
    total_ = computed(n * b, n_, b_)
    total = total_.value
    msg = (f"Global eval batch = {show('world size', n_)} x {show('per_device_eval_batch_size', b_)} = {total_}, not a "
           f"multiple of the eval num_generations {g}.")
    if total_.assumed:
        msg += " Values marked (assumed) are not in the log; check them against the run."
    fix = [f"world size {n_} x per_device_eval_batch_size {b_} = {total_}; {total} % {g} = {total % g}."]
    step = g // gcd(n, g)
    opts = multiples_around(b, step)
    # fixes that need no assumption come first: the eval batch size needs only the world size
    options = [(f"--per_device_eval_batch_size {' or '.join(map(str, opts))} "
                f"(gives {' / '.join(str(n * v) for v in opts)}, divisible by {g})"
                + assumptions(("world size", n_)) + ".", n_.assumed)]
    geval = "num_generations_eval" if flag_in_version(run, "num_generations_eval") else "num_generations"
    valid = divisors(total, 2 if geval == "num_generations" else 1)
    if valid:
        options.append((f"--{geval} {' or '.join(map(str, nearest(valid, g)))}"
                        + (" (eval only; training keeps its num_generations)" if geval == "num_generations_eval"
                           else " (also changes training)")
                        + assumptions(("world size", n_), ("per_device_eval_batch_size", b_)) + ".", total_.assumed))
    fix += sure_first(options)
    mm = run.swift_major_minor
    if mm is not None and mm < (3, 6) and run.args.get("val_dataset") in (None, [], ""):
        fix.append("Or disable evaluation: this version carves 1% of the data for eval by default "
                   "(--split_dataset_ratio 0 turns it off).")
    else:
        fix.append("Or disable evaluation: --eval_strategy no (and drop --val_dataset).")
    return Diagnosis(message=msg, fix=tuple(fix))
