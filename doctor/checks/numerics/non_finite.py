"""GD620: NaN/inf in the logged metrics (loss, grad_norm, kl, reward, reward_std, a reward function's mean)."""
from __future__ import annotations

import math
from dataclasses import replace
from itertools import compress
from operator import attrgetter, not_
from typing import Any

from ... import lazyre
from ...engine import columns
from ...engine.columns import Block
from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import OUT_OF_RANGE, Rule
from ...signals import Metrics
from ...swift.trainer_kind import PREFERENCE_KEY
from .._rows import RAISED, step_rows
from .._series import (
    EXCERPT_CONFIDENCE,
    FEW_ROWS,
    Series,
    excerpt_steps,
    few_rows_caveat,
    fmt,
    num,
    reward_key_name,
    step_row,
)
from ._nan_fixes import GRAD_ONLY, dtype_of, empty_supervision, nan_fixes, overlap_comm_fix

CORE_NAN_KEYS = ("loss", "grad_norm", "kl", "reward", "reward_std")
# a preference trainer's values of the policy itself (trl dpo_trainer.py get_batch_loss_metrics, ms-swift's DPO rows:
# rewards/chosen, logps/rejected, logits/chosen, nll_loss): NaN there is the model's forward pass, not a reward function
_POLICY_KEYS = lazyre.compile(r"^(?:train/)?(?:" + PREFERENCE_KEY + r"|nll_loss)$")
# means over the completion tokens the loss counts (trl 0.29.1 and ms-swift 4.6.0 grpo_trainer.py: masked_batch_mean,
# gathered with nanmean): NaN when a batch has none to average, while loss and grad_norm stay finite
CLIP_NAN_KEYS = ("clip_ratio", "clip_ratio/low_mean", "clip_ratio/low_min", "clip_ratio/high_mean",
                 "clip_ratio/high_max", "clip_ratio/region_mean", "cispo_clip_ratio")
METRIC_ONLY = frozenset(("kl",) + CLIP_NAN_KEYS)
_FINITE = attrgetter("finite")
METRIC_ONLY_PRIORITY = 50   # below GD641 (truncated, 52) and GD610 (flat, 70): what makes such a batch


_PREFERENCE_KEYS = ("rewards/chosen", "rewards/margins", "logps/chosen")  # trl's DPO/ORPO/CPO trainers log these


def _bad(v: float | None) -> bool:
    return v is not None and (math.isnan(v) or math.isinf(v))


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
    ks = [k for k in CORE_NAN_KEYS + CLIP_NAN_KEYS if k in v and _bad(num(v[k]))]
    names, policy = _named_keys(tuple(v))
    rk = [f"rewards/{n}" for n in names if _bad(num(v.get(f"rewards/{n}/mean", v.get(f"rewards/{n}"))))]
    # a preference trainer's own values of the policy (logits/chosen, logps/rejected...): NaN there is its forward pass
    pk = [k for k in policy if k not in rk and _bad(num(v[k]))]
    return ks + rk + pk


_NAMED: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}


def _named_keys(keys: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the reward function named by each rewards/ key, in order; the policy's keys) of a row's keys, cached per key
    sequence: a run that diverged has a NaN in every row, and its rows share a few layouts."""
    got = _NAMED.get(keys)
    if got is None:
        if len(_NAMED) >= 256:
            _NAMED.clear()
        got = _NAMED[keys] = ([n for n in map(reward_key_name, keys) if n],
                              [k for k in keys if _POLICY_KEYS.match(k)])
    return got


class MetricsNonFinite(Rule):
    """GD620: NaN/inf in loss, grad_norm, kl, reward, reward_std or a reward function's mean.

    Streams exactly (no thinning): the first bad row, the finite row before it, counts, and the
    smallest grad_norm seen before the first bad row."""

    kinds = frozenset({Metrics})
    idle_silent = True   # fed nothing: no first bad row (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.rows = 0
        self.n_bad = 0
        self.n_bad_gn_after = 0      # rows after the first bad one with a bad grad_norm
        self.n_metric_only = 0       # bad rows whose only non-finite values are kl or clip ratios (METRIC_ONLY)
        self.first: Metrics | None = None
        self.bad_keys: list[str] = []
        self.prev: Metrics | None = None
        self.min_gn: tuple[float, Metrics] | None = None
        self.last: Metrics | None = None
        self.first_seen: Metrics | None = None   # the first step row (with last: whether the rows are the whole run)
        self.after: Metrics | None = None   # the row right after the first bad one (its learning rate: warm-up)

    def feed(self, signal: Any) -> None:
        m: Metrics = signal
        if not isinstance(signal, Metrics) or step_row(m) is None:
            return
        self._feed(m)

    def feed_many(self, signals: list[Any]) -> None:
        if not isinstance(signals[0], Metrics):   # signals of one type (Session.emit_many)
            super().feed_many(signals)
            return
        block = Block.of(signals)
        if block is not None and block.gsteps() is not None and self._feed_block(signals, block):
            return
        for m, row in zip(signals, step_rows(signals)):
            if row is not None and row is not RAISED:
                self._feed_step(m)

    def _feed_block(self, signals: list[Metrics], block: Block) -> bool:
        """feed_many over a block whose step rows all read without raising (columns.Block.gsteps): the finite rows
        before the first bad one by their grad_norm column (the smallest, its first row), the rest as rows. False,
        nothing read, when that column is not plain finite floats."""
        at = block.steps().nonzero()[0].tolist()
        head = at
        if self.first is None:
            finite = [bool(signals[i].finite) for i in at]
            head = at[:finite.index(False)] if False in finite else at
            if head:
                col = block.floats("grad_norm")
                if col is None:
                    return False
                cand = head[:-1]   # the last row of the run of finite rows stays prev, its grad_norm not yet read
                gn, has = col[0][cand], col[1][cand]
                gn = gn[has]
                if gn.size and not bool(columns.np.isfinite(gn).all()):
                    return False
                self._finite_rows(signals, head, cand, has, gn)
        rest = at[len(head):] if self.first is None else at
        # after the first bad row a finite row only counts and is the last (and the first after it): the finite
        # stretches between the rows that may be bad are taken whole, those rows one by one
        done = 0
        for k in compress(range(len(rest)), map(not_, map(_FINITE, map(signals.__getitem__, rest)))):
            self._finite_stretch(signals, rest[done:k])
            self._feed_step(signals[rest[k]])
            done = k + 1
        self._finite_stretch(signals, rest[done:])
        return True

    def _finite_stretch(self, signals: list[Metrics], rows: list[int]) -> None:
        """_feed_step of rows known finite, in order."""
        if not rows:
            return
        if self.first is None:   # before the first bad row each one matters (prev, the smallest grad_norm)
            for i in rows:
                self._feed_step(signals[i])
            return
        self.rows += len(rows)
        self.last = signals[rows[-1]]
        if self.after is None:
            self.after = signals[rows[0]]

    def _feed_step(self, m: Metrics) -> None:
        if m.finite and self.first is not None:   # _feed of a finite row after the first bad one
            self.rows += 1
            self.last = m
            if self.after is None:
                self.after = m
        else:
            try:
                self._feed(m)
            except OUT_OF_RANGE:   # as Session._route: that row only
                pass

    def _finite_rows(self, signals: list[Metrics], head: list[int], cand: list[int], has: Any, gn: Any) -> None:
        """_feed of the finite rows ``head`` while no bad row was seen: prev's grad_norm and then each but the last
        row's is a candidate for the smallest before the first bad row (the first of equal ones)."""
        if self.first_seen is None:
            self.first_seen = signals[head[0]]
        if self.prev is not None:
            g = num(self.prev.values.get("grad_norm"))
            if g is not None and (self.min_gn is None or g < self.min_gn[0]):
                self.min_gn = (g, self.prev)
        if gn.size:
            j = int(gn.argmin())
            if self.min_gn is None or gn[j] < self.min_gn[0]:
                self.min_gn = (float(gn[j]), signals[[c for c, h in zip(cand, has.tolist()) if h][j]])
        self.rows += len(head)
        self.prev = self.last = signals[head[-1]]

    def _feed(self, m: Metrics) -> None:
        self.rows += 1
        if self.first_seen is None:
            self.first_seen = m
        bad = [] if m.finite else _row_bad_keys(m.values)
        if self.first is not None and self.after is None:
            self.after = m
        if bad:
            self.n_bad += 1
            if METRIC_ONLY.issuperset(bad):
                self.n_metric_only += 1
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

    def _excerpt(self) -> bool:
        """Whether the rows seen are an excerpt of the run (_series.excerpt)."""
        a = step_row(self.first_seen) if self.first_seen is not None else None
        b = step_row(self.last) if self.last is not None else None
        if a is None or b is None:
            return True
        return excerpt_steps(a.step, b.step, b.max_steps, self.rows)

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.first is None:
            return []
        run = ctx.run
        base = ("loss", "grad_norm", "kl", "reward", "reward_std", "learning_rate", "completions/clipped_ratio")
        s = Series(base + CLIP_NAN_KEYS + tuple(k for k in self.bad_keys
                                                 if k not in base and k not in CLIP_NAN_KEYS and k in self.first.values))
        for m in ([self.min_gn[1]] if self.min_gn else []) + ([self.prev] if self.prev else []) + [self.first]:
            s.add(m)
        first = s.n - 1
        prev = first - 1 if self.prev is not None else -1
        bad_keys = self.bad_keys
        core = [k for k in bad_keys if k in CORE_NAN_KEYS or _POLICY_KEYS.match(k)]
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
        if self.n_metric_only == self.n_bad:
            return [metric_only_finding(self, s, run, first, bad_keys, self.n_bad, self.rows, self._excerpt())]
        if core and all("logits/" in k for k in core) and _finite_at(s, first, "loss"):
            logps = [k for k, v in self.first.values.items() if "logps/" in k and num(v) is not None and not _bad(num(v))]
            return [_logits_statistic_finding(self, s, first, core, self.n_bad, self.rows, bool(logps))]
        kl_first = core == ["kl"]
        # a run whose rows are finite again after it did not lose its weights there (a loss scaler skips the step
        # whose gradients are not finite; a logged value alone may overflow): "from then on" would be false
        recovered = self.last is not None and self.last is not self.first and (
            self.last.finite is True or (self.last.finite is None and not _row_bad_keys(self.last.values)))
        vals = ", ".join(f"{k} {fmt(s.cols[k][first]) if k in s.cols else 'nan'}" for k in bad_keys[:6])
        msg = (f"Non-finite metrics {'first at' if recovered else 'from'} {s.label(first)}{'' if recovered else ' on'} "
               f"({vals}); {self.n_bad} of {self.rows} logged steps are affected.")
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
        elif lr_col[first] == 0 and all(not v for v in lr_col[:first]):
            # no update had moved the weights: a lower learning rate or harder clipping cannot change the forward pass
            msg += (f" learning_rate was still 0 at {s.label(first)} (read), with no positive value logged before it: "
                    f"no update with a positive learning rate shows before the NaN, so the weights were most likely "
                    f"unchanged and the forward or backward pass itself overflowed (float16 does most often: its range "
                    f"ends at 65504, and its loss scaler skips the steps whose gradients are not finite); no learning "
                    f"rate or clipping setting caused it.")
            sev = Severity.error
            fix = ["Load and train the model in bfloat16, or float32 on GPUs without bfloat16 (V100, T4): float16 "
                   "activations of large models overflow in the first forward pass."]
        else:
            if recovered:
                msg += (" Rows after it are finite again (the last row read is), so the weights were not lost at that "
                        "step: it was most likely skipped (a loss scaler skips a step whose gradients are not finite) "
                        "or only a logged value overflowed")
            elif all(_POLICY_KEYS.match(k) for k in core):
                msg += (" The policy's own log-probabilities or logits are not finite: its forward pass no longer "
                        "gives numbers, so every later step is meaningless")
            else:
                msg += " Once the loss or gradients are NaN the weights are corrupted and every later step is meaningless"
            # a preference run (DPO's chosen/rejected metrics) samples nothing, nor does a run whose rows hold no
            # reward at all (supervised training, pre-training): no rollout to fail
            samples = any(k == "reward" or k.startswith(("rewards/", "completions/")) for k in self.first.values)
            msg += ("." if recovered or any(k in self.first.values for k in _PREFERENCE_KEYS) or not samples else
                    "; sampling from NaN logits then fails with 'probability tensor contains either inf, nan or "
                    "element < 0'.")
            sev = Severity.error
            first_step = self.prev is None and _first_logging_point(self.first, self.after) and \
                not _bar_past_first_step(ctx, self.first)
            empty = empty_supervision(self.first.values) if first_step else None
            if empty is not None:
                msg += empty[0]
            elif first_step:
                label = s.label(first)
                msg += (f" {label[0].upper() + label[1:]} is the run's first logged step and already non-finite, with "
                        f"no finite step before it: no update preceded it, so the first forward or backward pass gave "
                        f"NaN (the precision, an attention kernel or the library versions), not the learning rate or "
                        f"unclipped gradients.")
            lr_next = num(self.after.values.get("learning_rate")) if self.after is not None else None
            fix = nan_fixes(run, kl_first=kl_first, last_ok=last_ok, lr_seen=lr_seen,
                            unscaled=self.first.values.get("loss_scale") == 1.0, swift_grpo=swift_grpo(ctx),
                            first_step=first_step, lr_next=lr_next)
            overlap = overlap_comm_fix(run) if only_gn and _finite_at(s, first, "loss") and empty is None else None
            if overlap is not None:
                msg = msg.replace("the first forward or backward pass gave NaN", "the first backward pass gave NaN", 1)
                msg += " " + GRAD_ONLY
                # first where the run's config is ZeRO-1/2; a condition after the other fixes where it is not read
                fix = [overlap, *fix] if not overlap.startswith("If ") else [*fix, overlap]
            if empty is not None:
                fix = [empty[1], *fix]
        keys = ("loss", "grad_norm", "kl", "reward", "reward_std", "learning_rate")
        shown = keys + tuple(k for k in core if k not in keys)[:3]   # the NaN values themselves, when not among these
        ev = ([s.evidence(prev, shown)] if prev >= 0 else []) + [s.evidence(first, shown)]
        watched = [k for k in ("loss", "grad_norm", "kl") if k in self.first.values] + [
            k for k in core if k not in ("loss", "grad_norm", "kl")][:3]
        return [self.make(message=msg, fix=fix, evidence=ev, count=self.n_bad, seq=s.seq(first), severity=sev,
                          verify=verify_finite(watched or core or bad_keys[:3], s.label(first)),
                          title=_title(bad_keys, [num(self.first.values.get(k)) for k in bad_keys], s.label(first),
                                       recovered))]


def _title(bad_keys: list[str], values: list[float | None], where: str, recovered: bool = False) -> str:
    """The finding's title from what went non-finite: the columns (at most three named), NaN or inf as the first bad
    row shows them, and where it started (``recovered``: finite rows follow)."""
    named = ", ".join(bad_keys[:3]) + (f" and {len(bad_keys) - 3} more" if len(bad_keys) > 3 else "")
    verb = "was" if len(bad_keys) == 1 else "were"
    kinds = {"NaN" if v is None or v != v else "inf" for v in values}
    return (f"{named} {verb} {'/'.join(sorted(kinds))} at {where}, finite again after it" if recovered else
            f"{named} {verb} {'/'.join(sorted(kinds))} from {where} on")


def swift_grpo(ctx: RunState) -> bool:
    """An ms-swift GRPO run: the one ms-swift's GRPO best practice is written for."""
    return ctx.framework()[0] == "ms-swift" and ctx.trainer_kind().kind == "grpo"


def _first_logging_point(first: Metrics, after: Metrics | None) -> bool:
    """Whether ``first`` is the run's first logged step: its step is 1 or one logging interval (the next row's step
    minus its own), or, with no step logged, its epoch is 0 or one logging interval of epochs from 0."""
    row, nxt = step_row(first), (step_row(after) if after is not None else None)
    if row is not None and row.step is not None:
        return row.step <= 1 or (nxt is not None and nxt.step is not None and nxt.step - row.step == row.step)
    e = num(first.values.get("epoch"))
    if e is None:
        return False
    if e <= 0.01:
        return True
    e2 = num(after.values.get("epoch")) if after is not None else None
    return e2 is not None and e2 > e and abs((e2 - e) - e) <= 0.01 + 0.25 * e


def _bar_past_first_step(ctx: RunState, m: Metrics) -> bool:
    """The row is printed after (glued to) a progress bar that shows steps before it ran: `9/860 [00:43<...]{'loss':
    nan, ...}` (devlogs71/7403), so updates preceded the row whatever its epoch says."""
    line = next((ln for tail in ctx.tails.values() for ln in tail
                 if ln.where.path == m.where.path and ln.where.line == m.where.line), None)
    if line is None:
        return False
    from ..hang.endings import BAR  # noqa: PLC0415 - tqdm's bar as the hang rules read it
    bar = BAR.search(line.raw.split("{", 1)[0])
    return bar is not None and int(bar.group("k")) > 1


def _finite_at(s: Series, i: int, key: str) -> bool:
    v = s.cols[key][i] if key in s.cols else None
    return v is not None and not _bad(v)


def _logits_statistic_finding(rule: Rule, s: Series, first: int, core: list[str], n_bad: int, rows: int,
                              logps_finite: bool) -> Finding:
    """A preference trainer's logits/chosen and logits/rejected NaN while its loss is finite: trl's DPO family logs the
    mean of the raw logits over the completion tokens as a statistic; the loss is computed from the log-probabilities,
    so a NaN only there did not reach the update (a warning)."""
    vals = ", ".join(f"{k} nan" for k in core[:4])
    finite = [f"{k} {fmt(s.cols[k][first])}" for k in ("loss", "grad_norm") if _finite_at(s, first, k)]
    msg = (f"{vals} at {s.label(first)} ({n_bad} of {rows} logged steps), while {' and '.join(finite)} "
           f"{'is' if len(finite) == 1 else 'are'} finite. The logits values are a logged statistic (the mean of the "
           "raw logits over the completion tokens); the loss is computed from the log-probabilities"
           + (", which are finite here" if logps_finite else " (not logged in this row)")
           + ", so the NaN is in that statistic (an empty selection of tokens, or an overflow of the mean in half "
           "precision), not in what the update used.")
    fix = ["Watch loss and grad_norm over the next steps: while they stay finite the updates are unaffected; if they "
           "turn NaN too, train in bfloat16 or float32 and lower the learning rate.",
           "Check that no sample's completion is cut to nothing (max_length / max_prompt_length leave room for the "
           "completion): a completion with no tokens left has no logits to average."]
    keys = ("loss", "grad_norm", "learning_rate") + tuple(core[:2])
    return rule.make(message=msg, fix=fix, evidence=[s.evidence(first, keys)], count=n_bad, seq=s.seq(first),
                     severity=Severity.warning, confidence="likely", verify=verify_finite(core[:4], s.label(first)))


def verify_finite(keys: list[str], label: str) -> str:
    """GD620's verify for the columns that were non-finite in this run (not every row logs kl; a DPO row's logits)."""
    keys = list(dict.fromkeys(keys)) or ["the logged metrics"]
    names = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
    return f"{names} stay finite past the step where they became NaN/inf ({label} in this run)"


def metric_only_finding(rule: Rule, s: Series, run, first: int, bad_keys: list[str], n_bad: int, rows: int,
                        part: bool = True) -> Finding:
    """NaN in kl or the clip ratios alone while loss and grad_norm are finite in every logged step: a mean over no
    tokens, not diverged weights (a warning)."""
    vals = ", ".join(f"{k} {fmt(s.cols[k][first])}" for k in bad_keys[:4]) + (", ..." if len(bad_keys) > 4 else "")
    finite = [f"{k} {fmt(s.cols[k][first])}" for k in ("loss", "grad_norm") if s.cols[k][first] is not None]
    if rows == 1:
        msg = f"The only logged step ({s.label(first)}) shows {vals}"
    else:
        msg = f"{vals} from {s.label(first)} on, in {n_bad} of {rows} logged steps"
    if finite:
        msg += f", while {' and '.join(finite)} {'are' if rows == 1 else 'were'} finite" + (
            "" if rows == 1 else " (loss and grad_norm finite in every logged step)") + "."
    else:
        msg += "; the row holds no loss or grad_norm to tell whether the weights are affected."
    msg += (" NaN in kl or the clip ratios alone is a mean with nothing to average, not diverged weights: both "
            "are means over the completion tokens the loss counts, gathered across ranks with nanmean, so a batch "
            "whose completions were all masked out gives NaN (ms-swift with --overlong_filter true logs 'All "
            "completions are overlong and truncated, resulting in NaN some values for some metrics (e.g., KL)'). "
            "Such a batch teaches nothing, but the weights are not NaN.")
    if rows <= FEW_ROWS and part:
        msg += few_rows_caveat(rows)
    clip = s.cols["completions/clipped_ratio"][first]
    L = run.int_arg("max_completion_length")
    fix = []
    cut = f"completions/clipped_ratio was {fmt(clip)} in that step, so l" if clip is not None else "L"
    fix.append(f"{cut}et completions finish: raise --max_completion_length" + (f" (now {L})" if L else "")
               + "; with --overlong_filter true (ms-swift) or mask_truncated_completions=True (trl) a batch of only "
                 "truncated completions leaves no token to learn from.")
    fix.append("Watch loss and grad_norm: if they turn NaN or inf too, the weights diverged (GD620 then reports an "
               "error with the fixes for that).")
    keys = ("loss", "grad_norm", "kl", "clip_ratio/region_mean", "clip_ratio", "completions/clipped_ratio")
    f = rule.make(message=msg, fix=fix, evidence=[s.evidence(first, keys)], count=n_bad, seq=s.seq(first),
                  severity=Severity.warning, confidence=EXCERPT_CONFIDENCE if rows <= FEW_ROWS and part else None,
                  verify=verify_finite(bad_keys[:4], s.label(first)))
    return replace(f, priority=METRIC_ONLY_PRIORITY)   # after the truncation or flat rewards that explain it
