"""GD610: reward_std 0 / frac_reward_zero_std 1 for the whole run or a long stretch; all rewards 0."""
from __future__ import annotations

import math
from dataclasses import replace

from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Rule
from ...sources.swiftconfig import RunConfig
from ...swift import version
from .._runargs import arg_float, more_generations
from .._series import EXCERPT_CONFIDENCE, FEW_ROWS, TOO_EARLY, SeriesRule, excerpt, few_rows_caveat, fmt
from ._flags import as_list, flag_name
from ._view import EPS_ZERO, REWARD_KEYS, RewardView, raise_length, truncation_note

FLAT_STREAK = 5           # consecutive flat logged steps that count as "stuck" in a longer run
GRAD_ROUNDING = 1e-6      # a grad_norm at or below this in flat steps is rounding (a real fp32 run logs 3e-08)


def version_at_least(run: RunConfig, mm: tuple[int, int]) -> bool:
    """Is the run's ms-swift at least ``mm``? An unknown version is a recent one."""
    return version.at_least(run.swift_major_minor, mm) is not False


def _grad_zero(s, i: int) -> bool:
    g = s.col("grad_norm")[i]
    return g is not None and g == 0


def _other_gradient(s, idx: list[int], gmax: float) -> str:
    """Where a grad_norm above 0 comes from in flat steps: the KL penalty when kl is above 0 there (beta > 0); with kl
    0 (or not logged) that term gives no gradient either (the k3 estimator's gradient is 0 where policy and reference
    agree), so another term of the loss, or steps of the logging window that were not flat."""
    kl = [v for v in (s.col("kl")[i] for i in idx) if v is not None and not math.isnan(v)]
    if kl and max(kl) > 0:
        return (f"the grad_norm logged (up to {fmt(gmax)}) comes from the KL penalty (kl up to {fmt(max(kl))}), not from "
                f"the rewards.")
    return (f"the grad_norm logged (up to {fmt(gmax)}) comes from another term of the loss ("
            + ("kl was 0, so not the KL penalty: " if kl else "")
            + "an auxiliary, entropy or SFT loss), or from steps of the logging window that were not flat.")


def flat_finding(rule: Rule, rv: RewardView, run: RunConfig) -> Finding | None:
    s = rv.s
    n = rv.n
    severity: Severity | None = None
    scope: str
    if rv.all_flat and n >= 3:
        severity, lo, hi = Severity.error, 0, n - 1
        scope = f"in all {n} logged steps ({s.span(rv.idx[0], rv.idx[-1])})"
    elif rv.all_flat and n == 2:
        severity, lo, hi = Severity.warning, 0, 1
        scope = f"in both logged steps ({s.span(rv.idx[0], rv.idx[-1])})"
    elif rv.all_flat and n == 1:
        # an excerpt of one row is judged by what it shows (issue 15 point 4), at warning: one row cannot say more
        severity, lo, hi = Severity.warning, 0, 0
        gz = not rv.all_zero and _grad_zero(s, rv.idx[0])
        scope = f"in the only logged step ({s.label(rv.idx[0])}{', with grad_norm 0' if gz else ''})"
    elif rv.streak >= FLAT_STREAK:
        hi = rv.streak_end
        lo = hi - rv.streak + 1
        at_end = hi == n - 1
        severity = Severity.error if at_end and rv.streak * 2 >= n else Severity.warning
        scope = (f"in {rv.streak} consecutive logged steps ({s.span(rv.idx[lo], rv.idx[hi])}"
                 f"{', up to the last logged step' if at_end else ''}) out of {n}")
    else:
        frac = s.col("frac_reward_zero_std")
        vals = [frac[i] for i in rv.idx if frac[i] is not None and not math.isnan(frac[i])]
        if n >= FLAT_STREAK and len(vals) >= FLAT_STREAK and sum(vals) / len(vals) >= 0.8:
            mean = sum(vals) / len(vals)
            lo, hi = 0, n - 1
            return _mostly_flat_finding(rule, rv, run, mean, len(vals))
        return None
    idx = rv.idx[lo:hi + 1]
    zero = all(rv.zero[lo:hi + 1])
    rewards = [r for r in rv.reward[lo:hi + 1] if r is not None]
    g = run.int_arg("num_generations")
    gtxt = f"{g}" if g else "num_generations"
    if zero:
        what = f"reward was 0 and reward_std 0 {scope}: no completion earned any reward"
    else:
        lo_r, hi_r = (min(rewards), max(rewards)) if rewards else (None, None)
        rr = f"reward {fmt(lo_r)}" if lo_r == hi_r else f"reward between {fmt(lo_r)} and {fmt(hi_r)}"
        fracs = [v for v in (s.col("frac_reward_zero_std")[i] for i in idx) if v is not None]
        logged = " (frac_reward_zero_std 1)" if fracs and min(fracs) >= 1 - EPS_ZERO else ""
        what = (f"reward_std was 0{logged} {scope}, with {rr}: inside every group all "
                f"completions got the same reward")
    # per-function detail
    per = []
    zero_funcs, const_funcs = [], []
    for name in rv.names:
        vals = [v for v in rv.means(name)[lo:hi + 1] if v is not None]   # one column per name: not one per step
        if not vals:
            continue
        if all(abs(v) <= EPS_ZERO for v in vals):
            zero_funcs.append(name)
            per.append(f"rewards/{name} 0")
        elif max(vals) - min(vals) <= EPS_ZERO:
            const_funcs.append(name)
            per.append(f"rewards/{name} {fmt(vals[0])}")
        else:
            per.append(f"rewards/{name} {fmt(min(vals))}-{fmt(max(vals))}")
    msg = what + (f" ({', '.join(per)})" if per else "") + "."
    gnorm = s.col("grad_norm")
    gn = [v for v in (gnorm[i] for i in idx) if v is not None and not math.isnan(v)]
    if gn and max(gn) > GRAD_ROUNDING:
        msg += (f" With every group of {gtxt} completions flat, every GRPO advantage is 0, so the rewards give no "
                f"gradient and the policy does not learn from them in {'this step' if len(idx) == 1 else 'these steps'}; "
                + _other_gradient(s, idx, max(gn)))
    elif not gn:   # grad_norm not logged: the loss may still hold the KL term (beta x kl), so only the rewards' part is 0
        msg += (f" With every group of {gtxt} completions flat, every GRPO advantage is 0, so the rewards give no "
                f"gradient and the policy does not learn from them in {'this step' if len(idx) == 1 else 'these steps'}"
                f" (grad_norm is not logged; a loss above 0 is the KL term's).")
    else:
        msg += (f" With every group of {gtxt} completions flat, every GRPO advantage is 0, so loss and grad_norm are "
                f"0 and the policy does not learn from {'this step' if len(idx) == 1 else 'these steps'}.")
        if gn and max(gn) == 0:
            msg += " grad_norm was indeed 0 throughout."
        elif gn:
            msg += f" grad_norm stayed at rounding level (up to {fmt(max(gn))})."
    level = None
    start = s.steps[rv.idx[0]] if rv.idx else None
    few = n <= FEW_ROWS and excerpt(s, rv.idx)
    # a flat first step or two is common in a healthy run: info until more steps show that it lasts (a flat row from
    # later in a run is not that, and stays a warning that says what one row cannot show)
    # with no step logged, the epoch places the row: well into the first epoch is no start of the run
    epoch = s.col("epoch")[rv.idx[0]] if rv.idx else None
    # with neither (a row whose step and epoch the paste lost) nothing says it is early: not called so
    early = few and (start is not None and start <= FEW_ROWS or start is None and epoch is not None and epoch < 0.1)
    if few:
        msg += few_rows_caveat(n)
        level = EXCERPT_CONFIDENCE
    if early:
        msg = f"{TOO_EARLY} from {'one logged step' if n == 1 else f'{n} logged steps'}: " + msg
        severity = Severity.info
    fix: list[str] = []
    trunc = truncation_note(s, run, idx)
    if trunc:
        fix.append(trunc + ". " + raise_length(run))
    # every reward 0, the format reward included, and completions not cut: no completion has the parsed structure
    fmt_zero = [n for n in zero_funcs if "format" in n.lower() and flag_name(n) != "format"]
    if zero and fmt_zero and not trunc:
        msg += (f" The format reward ({', '.join(fmt_zero)}) was 0 too: not one completion has the structure the "
                f"reward parsers look for (the tags or answer layout), which points at the prompt and template (the "
                f"model is not asked for that format, or the checkpoint was trained on another one) rather than at "
                f"what the model knows.")
        fix.append("Read a few logged completions next to the reward functions' regexes (log_completions): make the "
                   "system prompt and chat template ask for exactly the format the rewards parse, the one the "
                   "checkpoint was trained to emit.")
    for name in zero_funcs:
        fl = flag_name(name)
        if fl == "format":
            fix.append("The format reward (Format) was 0 for every completion: it needs the whole completion to match "
                       "<think>...</think><answer>...</answer>. Ask for that format in the system prompt, or warm the "
                       "model up with SFT on examples in that format first (swift sft), then run GRPO from that "
                       "checkpoint.")
        elif fl == "accuracy":
            ds = as_list(run.args.get("dataset"))
            fix.append("The accuracy reward (MathAccuracy) was 0 for every completion: it compares the <answer> of each "
                       f"completion with the 'solution' column of {', '.join(ds) if ds else 'the dataset'}, so check "
                       "that the column holds the gold "
                       "answer in a parseable form and that the model writes <answer>...</answer>; a model that is "
                       "never right needs easier data or an SFT warm-up first.")
        else:
            fix.append(f"Reward '{fl}' (rewards/{name}) was 0 for every completion: run it offline on a few logged "
                       f"completions (--log_completions true writes completions.jsonl) to see whether the model or "
                       f"the reward is at fault.")
    if zero and not zero_funcs and not rv.names:
        fix.append("No rewards/<name> metric was logged: check that --reward_funcs is set and that the reward "
                   "functions return non-zero scores.")
    if const_funcs and not zero:
        fix.append(f"{', '.join(const_funcs)} gave the same score to every completion: a reward that never "
                   f"separates completions carries no signal; use rewards that can differ within a group (e.g. add "
                   f"accuracy or cosine next to format).")
    temp = arg_float(run, "temperature")
    if temp is not None and temp < 0.7:
        fix.append(f"--temperature {fmt(temp)} makes the {gtxt} completions of a prompt nearly identical: use 0.9-1.0.")
    elif temp is not None:
        fix.append(f"More diverse groups make differing rewards likelier: --temperature {fmt(temp)} -> "
                   f"{fmt(1.0 if temp < 1.0 else min(1.2, temp + 0.1))}, and/or {more_generations(run, g)}.")
    else:
        fix.append(f"More diverse groups make differing rewards likelier: {more_generations(run, g)}; keep "
                   f"--temperature at 0.9-1.0.")
    if version_at_least(run, (3, 3)) and not run.args.get("dynamic_sample"):
        fix.append("--dynamic_sample true resamples groups whose rewards are all equal (DAPO; up to "
                   "--max_resample_times, default 3), so flat groups do not waste steps.")
    keys = ["reward", "reward_std", "frac_reward_zero_std"] + [f"rewards/{n}/mean" if s.rstd.get(n) is not None
                                                              else f"rewards/{n}" for n in rv.names][:4] + ["grad_norm"]
    ev_idx = [idx[0]] + ([idx[-1]] if idx[-1] != idx[0] else [])
    ev = [s.evidence(i, keys) for i in ev_idx]
    found = rule.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(idx[0]), severity=severity,
                      confidence=level)
    return replace(found, action="") if early else found  # nothing to stop yet: the next steps decide


def _mostly_flat_finding(rule: Rule, rv: RewardView, run: RunConfig, mean: float, k: int) -> Finding:
    s = rv.s
    g = run.int_arg("num_generations")
    msg = (f"frac_reward_zero_std averaged {fmt(mean, 2)} over {k} logged steps ({s.span(rv.idx[0], rv.idx[-1])}): "
           f"in most groups every completion got the same reward, so most of each batch carried no learning signal.")
    fix = []
    if version_at_least(run, (3, 3)) and not run.args.get("dynamic_sample"):
        fix.append("--dynamic_sample true resamples flat groups (DAPO), up to --max_resample_times.")
    fix.append(f"Raise diversity within a group: {more_generations(run, g)}; --temperature 0.9-1.0.")
    fix.append("If rewards are saturated (every completion already scores the maximum), use harder prompts.")
    keys = ("reward", "reward_std", "frac_reward_zero_std")
    return rule.make(message=msg, fix=fix, evidence=[s.evidence(rv.idx[-1], keys)], count=k,
                     seq=s.seq(rv.idx[0]), severity=Severity.warning)


class RewardFlat(SeriesRule):
    """GD610: reward_std 0 / frac_reward_zero_std 1 for the whole run or a long stretch; all rewards 0."""

    series_keys = REWARD_KEYS + ("kl",)   # kl: where a gradient in flat steps comes from

    def finish(self, ctx: RunState) -> list[Finding]:
        rv = RewardView(self.s, ctx.run)
        if rv.n == 0 or rv.no_reward_funcs(ctx.table_metrics):
            return []
        flat = flat_finding(self, rv, ctx.run)
        return [flat] if flat is not None else []
