"""GD631 (info): loss exactly 0 with non-zero grad_norm and reward_std is expected GRPO behaviour."""
from __future__ import annotations

import math
from dataclasses import replace

from ...engine.columns import load_numpy
from ...engine.state import RunState
from ...model import Finding, Severity
from ...swift.trainer_kind import GROUP_KINDS
from .._columns import available, column
from .._runargs import arg_float
from .._series import EPS_STD, SeriesRule, fmt
from ._nan_fixes import NO_LABEL_CAUSES, NO_LABEL_CHECK, dtype_of


def _zero_loss_columns(loss: list[float | None], gn: list[float | None],
                       rstd: list[float | None]) -> tuple[list[int], list[int]]:
    """The rows that log a loss, and of them the ones with a gradient and a reward spread (grad_norm above 0,
    reward_std above EPS_STD); no rows at all when a logged loss is anything but 0 (NaN included)."""
    (lv, l_ok), (g, g_ok), (r, r_ok) = column(loss), column(gn), column(rstd)
    np = load_numpy()
    with np.errstate(invalid="ignore"):
        if (lv[l_ok] != 0).any():
            return [], []
        alive = l_ok & g_ok & (g > 0) & r_ok & (r > EPS_STD)
    return l_ok.nonzero()[0].tolist(), alive.nonzero()[0].tolist()


class LossZeroNormal(SeriesRule):
    """GD631 (info): loss exactly 0 with non-zero grad_norm and reward_std is expected GRPO behaviour."""

    want_rewards = False
    series_keys = ("loss", "grad_norm", "reward_std", "kl")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        loss, gn, rstd = s.col("loss"), s.col("grad_norm"), s.col("reward_std")
        if s.n and available(s.n):   # no rows (or a few): numpy is not even imported
            rows, alive = _zero_loss_columns(loss, gn, rstd)
        else:
            rows = [i for i in range(s.n) if loss[i] is not None]
            if not rows or any(loss[i] != 0 for i in rows):
                return []
            alive = [i for i in rows if gn[i] and gn[i] > 0 and not math.isnan(gn[i]) and rstd[i] and rstd[i] > EPS_STD]
        if not rows or not alive:
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


# a learning rate at or below which no update makes a finite loss diverge within a step or two: a warm-up's first
# rows (fine-tuning runs peak at 1e-6 to 2e-4; 1e-7 is a hundredth of the smallest)
WARMUP_LR = 1e-7


class SupervisedLossZero(SeriesRule):
    """GD637: a logged loss of exactly 0.0 in a run that logs no reward (supervised or preference training): a mean
    over no supervised token, not a converged model."""

    want_rewards = False
    series_keys = ("loss", "grad_norm", "token_acc", "learning_rate")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        # a GRPO-style loss of 0 is normal (GD631): a run that logs a reward or a KL to a reference model, or whose
        # trainer samples groups, is not this rule's
        if not s.n or any(k == "kl" or k.startswith(("reward", "rewards/", "train/reward", "objective/kl"))
                          for k in ctx.metric_facts) or ctx.trainer_kind().kind in GROUP_KINDS | {"ppo"}:
            return []
        loss, gn = s.col("loss"), s.col("grad_norm")
        zero = [i for i in range(s.n) if loss[i] == 0]
        if not zero:
            return []
        i = zero[0]
        before = next((k for k in range(i - 1, -1, -1) if loss[k] is not None and loss[k] > 0), None)
        grad = gn[i]
        acc = s.col("token_acc")
        both = [k for k in zero if acc[k] == 0]
        if before is None and both:
            # ms-swift's token_acc counts the predicted label tokens: a loss of 0 (every label predicted) beside an
            # accuracy of 0 (none predicted) is possible in one row only when the row scored no token at all
            k = both[0]
            msg = (f"loss is exactly 0.0 and token_acc exactly 0.0 at {s.label(k)}"
                   + (f" (and in {len(both)} of {s.n} logged steps)" if len(both) > 1 else "")
                   + ": a loss of 0 means every label token was predicted, an accuracy of 0 that none was; both hold "
                   "together only over no supervised token at all: every label of the batch is masked (-100), so "
                   "nothing is trained.")
            keys = ("loss", "token_acc", "grad_norm")
            return [self.make(message=msg, evidence=[s.evidence(k, keys)], count=len(both), seq=s.seq(k))]
        if before is None or (grad is not None and math.isnan(grad)):
            # a loss that was 0 from its first row shows no drop to 0 (frozen weights are GD630's reading); a NaN
            # gradient norm beside it is GD620's (an overflow and an empty batch both show it; GD620 tells them apart)
            return []
        shown = f"loss was exactly 0.0 at {s.label(i)} (after {fmt(loss[before])} at {s.label(before)})"
        keys = ("loss", "grad_norm", "learning_rate")
        evidence = [s.evidence(before, keys), s.evidence(i, keys)]
        if grad is None:
            lrs = [v for v in s.col("learning_rate")[:i + 1] if v is not None]
            if lrs and max(lrs) <= WARMUP_LR and dtype_of(ctx.run) != "float16":
                return [self._no_label_at_warmup(shown, max(lrs), len(zero), evidence, s.seq(i))]
            return [self._nan_window(ctx, shown, len(zero), evidence, s.seq(i))]
        shown += f" with grad_norm {fmt(grad)}"
        msg = (f"{shown}, in a run that logs no reward: a language-model loss is exactly 0 only over no supervised "
               f"token (every label of the batch masked to -100), not from a model that learned its data"
               + (f"; {len(zero)} of {s.n} logged steps show it" if len(zero) > 1 else "") + ".")
        # a finite gradient norm beside it rules out a NaN loss in the window's last step, not the other readings
        return [self.make(message=msg, evidence=evidence, count=len(zero), seq=s.seq(i), confidence="likely")]

    def _no_label_at_warmup(self, shown: str, lr: float, zeros: int, evidence: list, seq: int) -> Finding:
        """The drop to 0 at a learning rate no update could diverge at (a warm-up's first steps): of the two readings
        of a logged 0.0 (a window of NaN losses, a batch with no supervised token), the updates cannot have made the
        loss NaN, and no float16 is shown to overflow; the empty batch is the reading left."""
        msg = (f"{shown}. The learning rate up to that row is at most {fmt(lr)} (read from the rows): steps that small "
               f"cannot make a finite loss diverge, so the 0.0 is not a loss the updates blew up. The likelier reading "
               f"of a loss of exactly 0 here is a batch with no supervised token (every label masked to -100; the "
               f"transformers Trainer also logs 0.0 for a window whose losses were NaN, which a mean over no token is)"
               + (f"; {zeros} logged steps show 0.0" if zeros > 1 else "") + ".")
        fix = [f"Count the supervised tokens of a batch: {NO_LABEL_CAUSES} leaves no label; {NO_LABEL_CHECK}.",
               "If the labels hold tokens, set logging_nan_inf_filter to false (a TrainingArguments field) to log the "
               "NaN instead of 0.0: a NaN from the first steps is a forward pass overflowing (float16) or bad inputs."]
        return self.make(message=msg, fix=fix, evidence=evidence, count=zeros, seq=seq, confidence="likely",
                         alternatives=("loss-nan-or-inf",),
                         title="The loss falls to exactly 0 during warm-up: a batch with no supervised token")

    def _nan_window(self, ctx: RunState, shown: str, zeros: int, evidence: list, seq: int) -> Finding:
        """A drop from a finite loss to exactly 0 with no gradient norm logged beside it. The transformers Trainer
        (``_inner_training_loop``, every release since 4.18) adds, for a step whose loss is NaN or inf, the logging
        window's running mean instead (``logging_nan_inf_filter``, on by default); the running sum is reset to 0 at
        each log, so a window of NaN steps only is logged as 0.0. A diverged loss and a batch with no supervised token
        (a mean over no token is NaN) both give it; without a gradient norm the row cannot tell them apart."""
        dtype = dtype_of(ctx.run)
        msg = (f"{shown}. The transformers Trainer logs 0.0 for a logging window in which every step's loss came out NaN "
               f"or inf (its logging_nan_inf_filter, on by default, adds the window's running mean, which is 0 when the "
               f"window starts), so this row most likely stands for NaN losses: a diverged loss "
               + ("(float16 training, the run's dtype, overflows easily) " if dtype == "float16" else
                  "(a float16 overflow or too high a learning rate) ")
               + "gives it, and so does a batch with no supervised token. No gradient norm is logged to tell the two "
               "apart" + (f"; {zeros} logged steps show 0.0" if zeros > 1 else "") + ".")
        fix = ["Set logging_nan_inf_filter to false (a TrainingArguments field) to log the NaN instead of 0.0, and "
               "train in bfloat16 on Ampere or newer GPUs (float32 on older ones) rather than float16; lower the "
               "learning rate if the loss still diverges.",
               f"If a loss of 0 shows from the first steps instead, count the supervised tokens of a batch: "
               f"{NO_LABEL_CAUSES} leaves no label; {NO_LABEL_CHECK}."]
        found = self.make(message=msg, fix=fix, evidence=evidence, count=zeros, seq=seq, confidence="likely",
                          alternatives=("dataset-or-template-error",),
                          title="The loss falls to exactly 0: the value the Trainer logs for a window of NaN losses")
        return replace(found, category="loss-nan-or-inf")   # the rule's category is the empty-label reading
