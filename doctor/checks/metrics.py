"""Training metrics over time: flat or zero rewards, NaN/inf, zero gradients, and what they mean for GRPO.

Input: METRICS signals (one dict per logging step, from logging.jsonl or the printed dicts; numbers as
floats, ``nan``/``inf`` included). Key variants (swift-notes §3): ``reward``, ``reward_std``,
``frac_reward_zero_std`` (3.7+), ``rewards/<Name>/mean`` and ``/std`` (3.3+), ``rewards/<Name>`` (3.1-3.2
and trl <= 0.16 / open-r1), ``kl``, ``grad_norm``, ``loss``, ``completions/clipped_ratio`` and
``completions/mean_length`` (3.3+; ``response_clip_ratio`` / ``completion_length`` before), and
``global_step/max_steps`` ("5/3766"). Eval rows (``eval_*``) are ignored here.

GRPO facts the checks rely on: the advantage of a completion is its reward minus the mean of its
group of num_generations (divided by the group std by default), so a group whose completions all get
the same reward contributes nothing; when every group is flat (reward_std 0, frac_reward_zero_std 1)
loss and grad_norm are 0 by construction. ``reward_std`` is the mean within-group std;
``rewards/<Name>/std`` is the std over the whole batch.
"""
from __future__ import annotations

import math
import re
from typing import Any

from ..model import LINE, METRICS, Evidence, Finding, LogLine, Metrics, Severity
from ..rules import FinishContext, Hit, Rule
from ..sources.swiftconfig import RunConfig
from .rewards import CLASS_TO_FLAG, as_list
from ._runargs import arg_float, more_generations
from ._series import EPS_STD, Series, SeriesRule, fmt, longest_streak, num, reward_key_name, step_row

FLAT_STREAK = 5           # consecutive flat logged steps that count as "stuck" in a longer run
ALWAYS_ZERO_MIN = 5       # logged steps before "this reward function is always 0" is worth saying
EPS_ZERO = 1e-9


# ------------------------------------------------------------------------------------------ helpers
def flag_name(reward_name: str) -> str:
    return CLASS_TO_FLAG.get(reward_name, reward_name)


def dtype_of(run: RunConfig) -> str | None:
    v = run.args.get("torch_dtype")
    if v is None:
        return None
    s = str(v).lower().replace("torch.", "")
    return {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}.get(s, s)


def version_at_least(run: RunConfig, mm: tuple[int, int]) -> bool:
    v = run.swift_major_minor
    return v is None or v >= mm


# ------------------------------------------------------------------------------------------ rewards
class RewardView:
    """What the reward columns of a series say. Computed once per rule at finish."""

    def __init__(self, s: Series, run: RunConfig):
        self.s = s
        self.run = run
        rstd, frac, rew = s.col("reward_std"), s.col("frac_reward_zero_std"), s.col("reward")
        idx = [i for i in range(s.n) if rstd[i] is not None or frac[i] is not None or rew[i] is not None
               or any(c[i] is not None for c in s.rmean.values())]
        self.idx = idx
        self.n = len(idx)
        self.flat: list[bool] = []
        for i in idx:
            if rstd[i] is not None and not math.isnan(rstd[i]):
                self.flat.append(rstd[i] <= EPS_STD)
            elif frac[i] is not None and not math.isnan(frac[i]):
                self.flat.append(frac[i] >= 0.999)
            else:
                self.flat.append(False)
        self.known_flat = [rstd[i] is not None or frac[i] is not None for i in idx]

        def total(i: int) -> float | None:
            if rew[i] is not None:
                return rew[i]
            vals = [c[i] for c in s.rmean.values() if c[i] is not None]
            return sum(vals) if vals else None
        self.reward = [total(i) for i in idx]
        self.zero = [r is not None and abs(r) <= EPS_ZERO for r in self.reward]
        self.names = list(s.rmean)
        self.all_flat = self.n > 0 and all(self.flat) and all(self.known_flat)
        self.all_zero = self.n > 0 and all(self.zero) and self.all_flat
        self.streak, self.streak_end = longest_streak(self.flat)

    def means(self, name: str) -> list[float | None]:
        col = self.s.rmean.get(name, [])
        return [col[i] if i < len(col) else None for i in self.idx]

    def no_reward_funcs(self) -> bool:
        """ms-swift >= 4.4 without --reward_funcs: reward keys present but no rewards/<Name>, all 0 and flat."""
        if self.n == 0 or self.names or not self.all_zero:
            return False
        if as_list(self.run.args.get("reward_funcs")) or as_list(self.run.args.get("reward_model")):
            return False
        if self.run.args.get("use_gym_env"):
            return False
        return True

    def always_zero(self) -> list[str]:
        out = []
        for name in self.names:
            vals = [v for v in self.means(name) if v is not None]
            if len(vals) >= ALWAYS_ZERO_MIN and all(abs(v) <= EPS_ZERO for v in vals):
                out.append(name)
        return out


def _truncation_note(s: Series, run: RunConfig, idx: list[int]) -> str | None:
    clip = s.col("completions/clipped_ratio")
    if not any(clip[i] is not None for i in idx):
        clip = s.col("response_clip_ratio")
    vals = [clip[i] for i in idx if clip[i] is not None]
    if not vals:
        return None
    mean_clip = sum(vals) / len(vals)
    if mean_clip < 0.5:
        return None
    L = run.int_arg("max_completion_length")
    mlen = [v for v in (s.col("completions/mean_length")[i] for i in idx) if v is not None]
    if not mlen:
        mlen = [v for v in (s.col("completion_length")[i] for i in idx) if v is not None]
    lens = f", mean length {fmt(sum(mlen) / len(mlen))}" if mlen else ""
    cap = f" of max_completion_length {L}" if L else ""
    return (f"completions/clipped_ratio averaged {fmt(mean_clip, 2)} over these steps{lens}{cap}: most "
            f"completions were cut before they could finish, and a cut completion cannot close a format "
            f"(e.g. </answer>) or state a final answer")


def _raise_length(run: RunConfig) -> str:
    L = run.int_arg("max_completion_length")
    if not L:
        return "Raise --max_completion_length so that completions can finish (the ms-swift default is 512)."
    new = 512 if L < 256 else 2 * L
    return (f"Raise --max_completion_length from {L} to {new} or more so that completions can finish "
            f"(time and memory per step grow roughly linearly with it).")


def reward_flat_findings(rule: Rule, s: Series, run: RunConfig, *, want: str) -> list[Finding]:
    """want: 'flat' (GD610), 'unset' (GD611), 'always_zero' (GD612)."""
    rv = RewardView(s, run)
    if rv.n == 0:
        return []
    unset = rv.no_reward_funcs()
    if want == "unset":
        if not unset:
            return []
        return [_unset_finding(rule, rv, run)]
    if unset:
        return []
    flat = _flat_finding(rule, rv, run)
    if want == "flat":
        return [flat] if flat is not None else []
    if want == "always_zero":
        if flat is not None or rv.all_zero:
            return []
        return _always_zero_findings(rule, rv, run)
    return []


def _unset_finding(rule: Rule, rv: RewardView, run: RunConfig) -> Finding:
    s = rv.s
    first, last = rv.idx[0], rv.idx[-1]
    msg = (f"No reward function is configured: reward and reward_std are 0 in all {rv.n} logged step(s) "
           f"({s.span(first, last)}) and there is no rewards/<name> metric at all. ms-swift >= 4.4 no longer "
           f"stops with 'You must specify reward_funcs or reward_model'; it trains with every advantage 0, so "
           f"the model learns nothing from GRPO.")
    fix = ["Add --reward_funcs with built-in rewards (accuracy, format, cosine, repetition, soft_overlong, math, "
           "react_format, toolbench), e.g. --reward_funcs accuracy format, and/or --reward_model <dir>; custom "
           "rewards are registered with orms['name'] in an --external_plugins file.",
           "The accuracy reward needs a 'solution' column in the dataset (every extra column reaches the reward "
           "functions as a keyword argument)."]
    sev = Severity.error if rv.n >= 2 else Severity.warning
    keys = ("reward", "reward_std", "frac_reward_zero_std", "loss", "grad_norm")
    ev = [s.evidence(first, keys)] + ([s.evidence(last, keys)] if last != first else [])
    return rule.make(message=msg, fix=fix, evidence=ev, count=rv.n, seq=s.seq(first), severity=sev)


def _flat_finding(rule: Rule, rv: RewardView, run: RunConfig) -> Finding | None:
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
    elif rv.all_flat and n == 1 and rv.all_zero:
        severity, lo, hi = Severity.warning, 0, 0
        scope = f"in the only logged step ({s.label(rv.idx[0])})"
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
        what = (f"reward_std was 0 (frac_reward_zero_std 1) {scope}, with {rr}: inside every group all "
                f"completions got the same reward")
    # per-function detail
    per = []
    zero_funcs, const_funcs = [], []
    for name in rv.names:
        vals = [v for v in (rv.means(name)[k] for k in range(lo, hi + 1)) if v is not None]
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
    msg += (f" With every group of {gtxt} completions flat, every GRPO advantage is 0, so loss and grad_norm are "
            f"0 and the policy does not learn from these steps.")
    gn = [v for v in (s.col("grad_norm")[i] for i in idx) if v is not None]
    if gn and all(v == 0 for v in gn):
        msg += " grad_norm was indeed 0 throughout."
    fix: list[str] = []
    trunc = _truncation_note(s, run, idx)
    if trunc:
        fix.append(trunc + ". " + _raise_length(run))
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
                   f"{fmt(1.0 if temp < 1.0 else min(1.2, temp + 0.1))}, and/or {more_generations(run, g or 8)}.")
    else:
        fix.append(f"More diverse groups make differing rewards likelier: {more_generations(run, g or 8)}; keep "
                   f"--temperature at 0.9-1.0.")
    if version_at_least(run, (3, 3)) and not run.args.get("dynamic_sample"):
        fix.append("--dynamic_sample true resamples groups whose rewards are all equal (DAPO; up to "
                   "--max_resample_times, default 3), so flat groups do not waste steps.")
    keys = ["reward", "reward_std", "frac_reward_zero_std"] + [f"rewards/{n}/mean" if s.rstd.get(n) is not None
                                                              else f"rewards/{n}" for n in rv.names][:4] + ["grad_norm"]
    ev_idx = [idx[0]] + ([idx[-1]] if idx[-1] != idx[0] else [])
    ev = [s.evidence(i, keys) for i in ev_idx]
    return rule.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(idx[0]), severity=severity)


def _mostly_flat_finding(rule: Rule, rv: RewardView, run: RunConfig, mean: float, k: int) -> Finding:
    s = rv.s
    g = run.int_arg("num_generations")
    msg = (f"frac_reward_zero_std averaged {fmt(mean, 2)} over {k} logged steps ({s.span(rv.idx[0], rv.idx[-1])}): "
           f"in most groups every completion got the same reward, so most of each batch carried no learning signal.")
    fix = []
    if version_at_least(run, (3, 3)) and not run.args.get("dynamic_sample"):
        fix.append("--dynamic_sample true resamples flat groups (DAPO), up to --max_resample_times.")
    fix.append(f"Raise diversity within a group: {more_generations(run, g or 8)}; --temperature 0.9-1.0.")
    fix.append("If rewards are saturated (every completion already scores the maximum), use harder prompts.")
    keys = ("reward", "reward_std", "frac_reward_zero_std")
    return rule.make(message=msg, fix=fix, evidence=[s.evidence(rv.idx[-1], keys)], count=k,
                     seq=s.seq(rv.idx[0]), severity=Severity.warning)


def _always_zero_findings(rule: Rule, rv: RewardView, run: RunConfig) -> list[Finding]:
    s = rv.s
    names = rv.always_zero()
    if not names:
        return []
    others = [n for n in rv.names if n not in names]
    moving = [n for n in others if any(v is not None and abs(v) > EPS_ZERO for v in rv.means(n))]
    if not moving:
        return []
    shown = ", ".join(f"rewards/{n}" for n in names)
    msg = (f"{shown} was 0 in every one of the {rv.n} logged steps ({s.span(rv.idx[0], rv.idx[-1])}) while "
           f"{', '.join('rewards/' + n for n in moving)} varied: "
           f"{'this reward function never' if len(names) == 1 else 'these reward functions never'} scored a "
           f"completion, so {'it adds' if len(names) == 1 else 'they add'} nothing to the advantages.")
    fix = []
    for n in names:
        fl = flag_name(n)
        if fl == "accuracy":
            ds = as_list(run.args.get("dataset"))
            fix.append("accuracy (MathAccuracy) compares each completion's <answer> with the dataset column "
                       f"'solution': check that every row of {', '.join(ds) if ds else 'the dataset'} has it, that it "
                       "holds a parseable gold answer, and that the prompt asks for <answer>...</answer>.")
        elif fl == "format":
            fix.append("format needs the whole completion to match <think>...</think><answer>...</answer>: ask for it "
                       "in the system prompt or SFT the model on that format first.")
        else:
            fix.append(f"Run the '{fl}' reward offline on logged completions (--log_completions true) and check the "
                       f"dataset columns it reads (they arrive as keyword arguments).")
    trunc = _truncation_note(s, run, rv.idx)
    if trunc:
        fix.append(trunc + ". " + _raise_length(run))
    keys = ["reward"] + [f"rewards/{n}/mean" if s.rstd.get(n) is not None else f"rewards/{n}" for n in rv.names][:4]
    return [rule.make(message=msg, fix=fix, evidence=[s.evidence(rv.idx[0], keys), s.evidence(rv.idx[-1], keys)],
                      count=rv.n, seq=s.seq(rv.idx[0]), severity=Severity.warning)]


REWARD_KEYS = ("loss", "reward", "reward_std", "frac_reward_zero_std", "grad_norm", "completions/mean_length",
               "completions/clipped_ratio", "completion_length", "response_clip_ratio")


class RewardFlat(SeriesRule):
    """GD610: reward_std 0 / frac_reward_zero_std 1 for the whole run or a long stretch; all rewards 0."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: FinishContext) -> list[Finding]:
        return reward_flat_findings(self, self.s, ctx.run, want="flat")


class RewardFuncsNotSet(SeriesRule):
    """GD611: ms-swift >= 4.4 without --reward_funcs trains silently with reward 0."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: FinishContext) -> list[Finding]:
        return reward_flat_findings(self, self.s, ctx.run, want="unset")


class RewardFuncAlwaysZero(SeriesRule):
    """GD612: one reward function is 0 in every step while the others move."""

    series_keys = REWARD_KEYS

    def finish(self, ctx: FinishContext) -> list[Finding]:
        return reward_flat_findings(self, self.s, ctx.run, want="always_zero")


def kendall_tau(vals: list[float]) -> float:
    n = len(vals)
    if n < 2:
        return 0.0
    conc = disc = 0
    for i in range(n):
        for j in range(i + 1, n):
            d = vals[j] - vals[i]
            if d > 0:
                conc += 1
            elif d < 0:
                disc += 1
    pairs = n * (n - 1) / 2
    return (conc - disc) / pairs if pairs else 0.0


def trend(vals: list[float]) -> tuple[float, float, float] | None:
    """(early mean, late mean, tau) of a series; tau on at most 400 evenly spaced points."""
    if len(vals) < 2:
        return None
    k = max(1, len(vals) // 4)
    early = sum(vals[:k]) / k
    late = sum(vals[-k:]) / k
    if len(vals) > 400:
        step = len(vals) / 400
        vals = [vals[int(i * step)] for i in range(400)]
    return early, late, kendall_tau(vals)


class RewardCollapse(SeriesRule):
    """GD613: one reward function falls towards 0 (while another rises: the policy trades one for the other)."""

    series_keys = ("reward", "reward_std", "frac_reward_zero_std")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        rv = RewardView(s, ctx.run)
        if rv.n < 2 or len(rv.names) == 0:
            return []
        series = {}
        for name in rv.names:
            pts = [(k, v) for k, v in enumerate(rv.means(name)) if v is not None and not math.isnan(v)]
            if len(pts) >= 2:
                series[name] = pts
        falling, rising = [], []
        for name, pts in series.items():
            vals = [v for _, v in pts]
            t = trend(vals)
            if t is None:
                continue
            early, late, tau = t
            if len(vals) <= 3:
                strictly_down = all(b < a for a, b in zip(vals, vals[1:]))
                strictly_up = all(b > a for a, b in zip(vals, vals[1:]))
                if strictly_down and early > 0.05 and (early - late) >= 0.2 * early:
                    falling.append((name, vals[0], vals[-1], pts))
                elif strictly_up and (late - early) >= 0.05 and (late - early) >= 0.1 * abs(early):
                    rising.append(name)
            else:
                peak = max(vals[: max(2, len(vals) // 2)])
                if (tau <= -0.5 and early > 0.05 and late <= 0.5 * early) or (peak > 0.1 and late <= 0.1 * peak):
                    falling.append((name, early, late, pts))
                elif tau >= 0.4 and late > early:
                    rising.append(name)
        if not falling:
            return []
        if len(rv.names) > 1 and not rising and all(len(p) <= 3 for _, _, _, p in falling):
            return []  # two or three points of one falling reward alone are noise
        name, a, b, pts = falling[0]
        n_pts = len(pts)
        first_i, last_i = rv.idx[pts[0][0]], rv.idx[pts[-1][0]]
        kind = "fell" if n_pts <= 3 else "fell on average"
        msg = (f"rewards/{name} {kind} from {fmt(a)} to {fmt(b)} over {n_pts} logged steps "
               f"({s.span(first_i, last_i)})")
        if rising:
            msg += (f" while {', '.join('rewards/' + r for r in rising)} rose: the policy is optimising the easier "
                    f"reward at the expense of this one")
        msg += "."
        if b <= 0.02:
            msg += " It has collapsed to about 0."
        fix = []
        fl = flag_name(name)
        if fl in ("accuracy", "accuracy_reward"):
            fix.append("Log completions (--log_completions true) and run the accuracy reward offline on them next to "
                       "the gold 'solution' column: check whether the parser or the model's answers fail.")
        else:
            fix.append(f"Log completions (--log_completions true) and check them against the '{fl}' reward offline.")
        if rising:
            w = as_list(ctx.run.args.get("reward_weights"))
            fix.append(f"Weight the falling reward higher with --reward_weights (one per reward function, in "
                       f"--reward_funcs order{'; now ' + ' '.join(w) if w else ''}) so that the easier "
                       f"{', '.join(rising)} cannot dominate the advantage.")
        fix.append("Make sure the prompt asks for the answer format the reward parses (e.g. <answer>...</answer> or "
                   "\\boxed{}); lower --learning_rate if the drop started right after training began.")
        keys = [f"rewards/{name}/mean" if s.rstd.get(name) is not None else f"rewards/{name}"] + [
            f"rewards/{r}/mean" if s.rstd.get(r) is not None else f"rewards/{r}" for r in rising][:3]
        ev = [s.evidence(first_i, keys), s.evidence(last_i, keys)]
        return [self.make(message=msg, fix=fix, evidence=ev, count=n_pts, seq=s.seq(first_i),
                          severity=Severity.warning)]


# ------------------------------------------------------------------------------------------ NaN / inf
CORE_NAN_KEYS = ("loss", "grad_norm", "kl", "reward", "reward_std")


def _bad(v: float | None) -> bool:
    return v is not None and (math.isnan(v) or math.isinf(v))


def nan_fixes(run: RunConfig, *, kl_first: bool, last_ok: int | None, first_bad_step: int | None,
              lr_seen: float | None) -> list[str]:
    fix: list[str] = []
    mgn = arg_float(run, "max_grad_norm")
    fix.append(f"Clip gradients harder: --max_grad_norm {fmt(mgn) if mgn is not None else '1.0 (default)'} -> 0.5 "
               f"(the ms-swift GRPO best practice against collapse).")
    lr = arg_float(run, "learning_rate") or lr_seen
    if lr:
        fix.append(f"Lower --learning_rate from {fmt(lr)} to {fmt(lr / 5)} (or use warmup: --warmup_ratio 0.05).")
    else:
        fix.append("Lower --learning_rate (e.g. 5x) and add warmup (--warmup_ratio 0.05).")
    dt = dtype_of(run)
    if dt == "float16":
        fix.append("--torch_dtype float16 overflows easily: use --torch_dtype bfloat16 (Ampere or newer GPUs) or "
                   "float32.")
    elif dt is None:
        fix.append("Train in bfloat16 (--torch_dtype bfloat16), not float16, which overflows easily.")
    if kl_first or run.args.get("overlong_filter"):
        fix.append(("KL became NaN first: t" if kl_first else "This run uses --overlong_filter true: t")
                   + "he ms-swift GRPO FAQ notes that with --overlong_filter true a GPU whose "
                   "completions were all truncated gets NaN KL; raise --max_completion_length"
                   + (f" (now {run.int_arg('max_completion_length')})" if run.int_arg("max_completion_length") else "")
                   + " or turn --overlong_filter off; a larger --beta keeps the policy closer to the reference.")
    save = run.int_arg("save_steps")
    if last_ok is not None and save:
        ck = (last_ok // save) * save
        if ck > 0:
            fix.append(f"The last finite step was {last_ok}: resume from checkpoint-{ck} (save_steps {save}) with "
                       f"--resume_from_checkpoint <output_dir>/checkpoint-{ck} after changing the settings above.")
        elif ck == 0:
            fix.append(f"The last finite step was {last_ok}, before the first checkpoint (save_steps {save}): restart "
                       f"from the beginning with the settings above, and save more often (--save_steps) to be able to "
                       f"resume next time.")
    elif last_ok is not None:
        fix.append(f"The last finite step was {last_ok}: resume from the last checkpoint saved before it.")
    return fix


def _row_bad_keys(v: dict[str, Any]) -> list[str]:
    for x in v.values():  # the common row has no NaN/inf at all: one pass over its values says so
        if type(x) is float:
            if x - x != 0:  # nan or +-inf
                break
        elif isinstance(x, str):
            y = num(x)
            if y is not None and y - y != 0:
                break
    else:
        return []
    ks = [k for k in CORE_NAN_KEYS if k in v and _bad(num(v[k]))]
    rk = [f"rewards/{n}" for n in (reward_key_name(k) for k in v) if n and _bad(num(v.get(f"rewards/{n}/mean",
                                                                                        v.get(f"rewards/{n}"))))]
    return ks + rk


class MetricsNonFinite(Rule):
    """GD620: NaN/inf in loss, grad_norm, kl, reward, reward_std or a reward function's mean.

    Streams exactly (no thinning): the first bad row, the finite row before it, counts, and the
    smallest grad_norm seen before the first bad row."""

    kinds = frozenset({METRICS})

    def __init__(self, meta):
        super().__init__(meta)
        self.rows = 0
        self.n_bad = 0
        self.n_bad_gn_after = 0      # rows after the first bad one with a bad grad_norm
        self.first: Metrics | None = None
        self.bad_keys: list[str] = []
        self.prev: Metrics | None = None
        self.min_gn: tuple[float, Metrics] | None = None
        self.last: Metrics | None = None

    def feed(self, kind: str, payload: Any) -> None:
        m: Metrics = payload
        if kind != METRICS or step_row(m) is None:
            return
        self.rows += 1
        bad = [] if m.finite else _row_bad_keys(m.values)
        if bad:
            self.n_bad += 1
            if self.first is None:
                self.first, self.bad_keys = m, bad
            elif "grad_norm" in bad:
                self.n_bad_gn_after += 1
        elif self.first is None:
            if self.prev is not None:
                gn = num(self.prev.values.get("grad_norm"))
                if gn is not None and (self.min_gn is None or gn < self.min_gn[0]):
                    self.min_gn = (gn, self.prev)
            self.prev = m
        self.last = m

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if self.first is None:
            return []
        run = ctx.run
        s = Series(("loss", "grad_norm", "kl", "reward", "reward_std", "learning_rate"))
        for m in ([self.min_gn[1]] if self.min_gn else []) + ([self.prev] if self.prev else []) + [self.first]:
            s.add(m)
        first = s.n - 1
        prev = first - 1 if self.prev is not None else -1
        bad_keys = self.bad_keys
        core = [k for k in bad_keys if k in CORE_NAN_KEYS]
        last_ok = s.steps[prev] if prev >= 0 else None
        lr_col = s.col("learning_rate")
        lr_seen = lr_col[first] if lr_col[first] else (lr_col[prev] if prev >= 0 else None)
        fp16 = dtype_of(run) == "float16"
        only_gn = core == ["grad_norm"] and not any(k.startswith("rewards/") for k in bad_keys)
        later_ok = self.last is not self.first and self.n_bad_gn_after == 0
        if only_gn and fp16 and later_ok and self.n_bad <= 2:
            msg = (f"grad_norm was {fmt(s.cols['grad_norm'][first])} at {s.label(first)} and finite afterwards: with "
                   f"float16 the loss scaler skips such a step and lowers its scale; isolated cases are harmless.")
            return [self.make(message=msg, fix=["Prefer --torch_dtype bfloat16 where the GPU supports it."],
                              evidence=[s.evidence(first, ("loss", "grad_norm", "learning_rate"))], count=self.n_bad,
                              seq=s.seq(first), severity=Severity.info)]
        kl_first = core == ["kl"]
        vals = ", ".join(f"{k} {fmt(s.cols[k][first]) if k in s.cols else 'nan'}" for k in bad_keys[:6])
        msg = (f"Non-finite metrics from {s.label(first)} on ({vals}); {self.n_bad} of {self.rows} logged steps are "
               f"affected.")
        if prev >= 0:
            gn = s.cols["grad_norm"][prev]
            msg += (f" The step before ({s.label(prev)}) was still finite"
                    + (f" with grad_norm {fmt(gn)}" if gn is not None else "") + ".")
            if gn is not None and self.min_gn is not None and s.n == 3:
                g0 = self.min_gn[0]
                if g0 > 0 and gn >= 5 * g0:
                    msg += (f" grad_norm had grown from {fmt(g0)} ({s.label(0)}) to {fmt(gn)}: the updates were "
                            f"blowing up before the NaN.")
        if not core:
            msg += (" Only reward function means are NaN: ms-swift turns a reward of None into NaN, so a reward "
                    "function returned None for every completion of the batch.")
            sev = Severity.warning
            fix = ["Make the reward return a float for at least the rows it applies to; rows it returns None for "
                   "are ignored, but a whole batch of None gives NaN."]
        else:
            msg += (" Once the loss or gradients are NaN the weights are corrupted and every later step is "
                    "meaningless; sampling from NaN logits then fails with 'probability tensor contains either "
                    "inf, nan or element < 0'.")
            sev = Severity.error
            fix = nan_fixes(run, kl_first=kl_first, last_ok=last_ok, first_bad_step=s.steps[first], lr_seen=lr_seen)
        keys = ("loss", "grad_norm", "kl", "reward", "reward_std", "learning_rate")
        ev = ([s.evidence(prev, keys)] if prev >= 0 else []) + [s.evidence(first, keys)]
        return [self.make(message=msg, fix=fix, evidence=ev, count=self.n_bad, seq=s.seq(first), severity=sev)]


_PROGRESS = re.compile(r"(?P<step>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)<")


class ProbabilityTensorNaN(Rule):
    """GD621: torch.multinomial on NaN/inf probabilities (CUDA device assert or RuntimeError)."""

    kinds = frozenset({LINE})
    literals = ("probability tensor contains", "it/s]", "s/it]")

    def __init__(self, meta):
        super().__init__(meta)
        self.progress: tuple[str, str, str] | None = None
        self.hits: list[tuple[LogLine, tuple[str, str, str] | None]] = []

    def feed(self, kind: str, payload: Any) -> None:
        line: LogLine = payload
        text = line.text
        if "probability tensor contains" in text:
            if len(self.hits) < 1000:
                self.hits.append((line, self.progress))
            return
        if "/it]" in text or "it/s]" in text:
            ms = list(_PROGRESS.finditer(text))
            if ms:
                m = ms[-1]
                self.progress = (m.group("step"), m.group("total"), m.group("elapsed"))

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if not self.hits:
            return []
        run = ctx.run
        line, prog = self.hits[0]
        msg = ("Sampling failed because the model's next-token probabilities contained NaN or inf "
               "('probability tensor contains either inf, nan or element < 0'): the policy's logits were already "
               "non-finite, i.e. the weights diverged (the NaN KL/loss that usually shows first).")
        if prog:
            msg += f" It happened after {prog[0]} of {prog[1]} steps, {prog[2]} into the run."
        fix = []
        if run.args.get("use_vllm") in (False, "false", "False") or run.args.get("use_vllm") is None:
            fix.append("This assert comes from torch.multinomial in transformers' generate (completions sampled "
                       "without vLLM, --use_vllm false): the cause is upstream, in training.")
        temp = arg_float(run, "temperature")
        if temp is not None and temp < 0.3:
            fix.append(f"--temperature {fmt(temp)} divides the logits by a small number and overflows in half "
                       f"precision: use 0.7-1.0.")
        fix.extend(nan_fixes(run, kl_first=False, last_ok=None, first_bad_step=None, lr_seen=None))
        save = run.int_arg("save_steps")
        fix.append("Resume from the last checkpoint whose logged loss/kl/grad_norm were still finite"
                   + (f" (checkpoints every {save} steps)" if save else "")
                   + " with --resume_from_checkpoint, after changing the settings above.")
        fix.append("Check the logged kl/loss/grad_norm before the crash (logging.jsonl): the first NaN or the first "
                   "grad_norm spike shows when the run went wrong; rerun with CUDA_LAUNCH_BLOCKING=1 for an exact "
                   "stack.")
        ranks = tuple(sorted({l.rank for l, _ in self.hits if l.rank is not None}))
        return [self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                          count=len(self.hits), ranks=ranks, seq=line.seq)]


def fp16_unscale_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    dt = dtype_of(run)
    msg = ("The model weights are float16 and the trainer runs float16 mixed precision: the gradient scaler refuses "
           "to unscale float16 gradients ('Attempting to unscale FP16 gradients').")
    if dt:
        msg += f" This run has --torch_dtype {dt}."
    fix = ["Use --torch_dtype bfloat16 on GPUs that support it (A100/H100/RTX 30xx and newer), or --torch_dtype "
           "float32 on older ones (V100, T4); the ms-swift FAQ recommends fp32 for this error.",
           "Do not combine float16 weights with --fp16 true for full-parameter training."]
    return {"message": msg, "fix": fix}


def loss_scale_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    msg = ("DeepSpeed lowered the fp16 loss scale to its minimum and the gradients still overflowed, so it stopped "
           "the run: the gradients are inf/NaN at any scale.")
    ds = run.args.get("deepspeed")
    if ds:
        msg += f" DeepSpeed config: {ds}."
    fix = [f for f in nan_fixes(run, kl_first=False, last_ok=None, first_bad_step=None, lr_seen=None)
           if "float16" not in f]
    fix.insert(0, "Switch to bf16 (--torch_dtype bfloat16; in a custom DeepSpeed JSON set \"bf16\": {\"enabled\": true} "
                  "and remove the \"fp16\" block) on GPUs that support it; fp16 overflows in long GRPO runs.")
    return {"message": msg, "fix": fix}


def anomaly_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    fn = g.get("fn") or "?"
    msg = (f"The backward pass of {fn} produced NaN (autograd anomaly detection). The forward stack printed before "
           f"this error shows the operation; in GRPO it is usually the log-softmax of overflowing logits or a "
           f"division by a zero std.")
    fix = nan_fixes(ctx.run, kl_first=False, last_ok=None, first_bad_step=None, lr_seen=None)
    fix.append("Turn anomaly detection off again once found: it slows training down a lot.")
    return {"message": msg, "fix": fix}


def dynamic_sample_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    n = hits[0].groups.get("n") or run.args.get("max_resample_times") or "3"
    g = run.int_arg("num_generations")
    msg = (f"dynamic_sample resampled {n} times and still found groups whose completions all got the same reward "
           f"({len(hits)} time(s) in this log): the data is mostly too easy or too hard for the model.")
    fix = [f"Raise --max_resample_times (now {n}) or filter the dataset to prompts the model solves sometimes but "
           f"not always.",
           f"More diversity per group: {more_generations(run, g or 8)}; --temperature 0.9-1.0."]
    return {"message": msg, "fix": fix}


# ------------------------------------------------------------------------------------------ gradients
class GradNormZero(SeriesRule):
    """GD630: grad_norm exactly 0 while reward_std > 0 (advantages are not zero, yet nothing moves)."""

    want_rewards = False
    series_keys = ("loss", "grad_norm", "learning_rate", "reward_std", "frac_reward_zero_std", "kl")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        run = ctx.run
        gn, rstd, frac = s.col("grad_norm"), s.col("reward_std"), s.col("frac_reward_zero_std")
        rows = [i for i in range(s.n) if gn[i] is not None and rstd[i] is not None and not math.isnan(rstd[i])]
        if not rows:
            return []
        bad = [gn[i] == 0 and rstd[i] > EPS_STD and (frac[i] is None or frac[i] < 0.999) for i in rows]
        n_bad = sum(bad)
        streak, end = longest_streak(bad)
        if not (n_bad == len(rows) or streak >= 3):
            return []
        lo = end - streak + 1 if n_bad != len(rows) else 0
        hi = end if n_bad != len(rows) else len(rows) - 1
        idx = [rows[k] for k in range(lo, hi + 1) if bad[k]]
        i0 = idx[0]
        std_vals = [rstd[i] for i in idx]
        if n_bad == len(rows):
            scope = (f"in the only logged step ({s.label(idx[0])})" if len(idx) == 1
                     else f"in all {len(idx)} logged steps ({s.span(idx[0], idx[-1])})")
        else:
            scope = f"in {streak} consecutive logged steps ({s.span(idx[0], idx[-1])})"
        msg = (f"grad_norm was exactly 0 {scope} although reward_std was {fmt(min(std_vals))}"
               + (f"-{fmt(max(std_vals))}" if max(std_vals) != min(std_vals) else "")
               + (f" and frac_reward_zero_std {fmt(frac[i0])}" if frac[i0] is not None else "")
               + ": the groups had non-zero advantages, so the policy loss should have produced gradients. No update "
                 "reached the trainable weights.")
        kl = s.col("kl")
        if all(kl[i] == 0 for i in idx if kl[i] is not None) and any(kl[i] is not None for i in idx):
            msg += " kl stayed 0 too: the policy never moved away from the reference."
        fix: list[str] = []
        offload = [f for f in ("offload_model", "offload_optimizer") if run.args.get(f) in (True, "true", "True")]
        mode = run.args.get("vllm_mode")
        if run.args.get("use_vllm") in (True, "true", "True") and offload:
            fix.append(f"This run uses vLLM{' ' + str(mode) + ' mode' if mode else ''} with "
                       f"{' and '.join('--' + f + ' true' for f in offload)}: ms-swift's GRPO docs (3.4) say that "
                       f"with offload_model on and grad_norm always 0 you should install vllm==0.7.3; otherwise try "
                       f"the run without {' / '.join('--' + f for f in offload)} (save memory with --sleep_level 1 "
                       f"instead) or with the vLLM version the ms-swift examples pin.")
        tuner = run.tuner()
        if tuner == "lora" or tuner is None:
            lr = run.args.get("lora_rank")
            tm = run.args.get("target_modules")
            fix.append("Check that LoRA parameters are trainable: the log line 'model_parameter_info: "
                       "PeftModelForCausalLM: ... Trainable [x%]' must show x > 0"
                       + (f" (this run: --lora_rank {lr}" + (f", --target_modules {tm}" if tm else "") + ")"
                          if lr else "") + ".")
        if run.args.get("deepspeed"):
            fix.append(f"With --deepspeed {run.args.get('deepspeed')} compare with a run without DeepSpeed (or ZeRO-2) "
                       f"on a few steps to see whether gradients are lost in the engine.")
        fix.append("Reproduce on a few steps with --logging_steps 1: if loss and grad_norm stay 0 while reward_std is "
                   "above 0, update ms-swift/trl/vLLM together to a combination the ms-swift README lists.")
        keys = ("loss", "grad_norm", "reward_std", "frac_reward_zero_std", "kl", "learning_rate")
        ev = [s.evidence(i0, keys)] + ([s.evidence(idx[-1], keys)] if idx[-1] != i0 else [])
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(i0))]


class LossZeroNormal(SeriesRule):
    """GD631 (info): loss exactly 0 with non-zero grad_norm and reward_std is expected GRPO behaviour."""

    want_rewards = False
    series_keys = ("loss", "grad_norm", "reward_std", "kl")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        loss, gn, rstd = s.col("loss"), s.col("grad_norm"), s.col("reward_std")
        rows = [i for i in range(s.n) if loss[i] is not None]
        if not rows or any(loss[i] != 0 for i in rows):
            return []
        alive = [i for i in rows if gn[i] and gn[i] > 0 and not math.isnan(gn[i]) and rstd[i] and rstd[i] > EPS_STD]
        if not alive:
            return []
        i = alive[0]
        beta = arg_float(ctx.run, "beta")
        msg = (f"loss is exactly 0 in all {len(rows)} logged step(s) while grad_norm ({fmt(gn[i])} at {s.label(i)}) "
               f"and reward_std ({fmt(rstd[i])}) are not: this is expected in GRPO. With one optimisation step per "
               f"generation the policy ratio is 1 and the group-normalised advantages average to 0, so the logged "
               f"loss is beta x KL"
               + (f" (beta {fmt(beta)})" if beta is not None else "")
               + ", which starts at 0; the gradients are still non-zero.")
        fix = ["Nothing to fix: judge progress by reward, reward_std, kl and grad_norm, not by the loss (ms-swift FAQ: "
               "loss approx. 0 is normal in GRPO)."]
        return [self.make(message=msg, fix=fix, evidence=[s.evidence(i, ("loss", "grad_norm", "reward_std", "kl"))],
                          count=len(rows), seq=s.seq(i), severity=Severity.info)]
