"""GD641: completions that are all truncated (completions/clipped_ratio about 1) or collapse in length."""
from __future__ import annotations

import math

from ...engine.state import RunState
from ...model import Finding, Severity
from .._series import EXCERPT_CONFIDENCE, FEW_ROWS, SeriesRule, excerpt, few_rows_caveat, fmt, longest_streak


class CompletionsTruncated(SeriesRule):
    """GD641: completions/clipped_ratio ~1 (all truncated) or completion length collapsing."""

    want_rewards = False
    series_keys = ("completions/mean_length", "completions/clipped_ratio", "completion_length", "response_clip_ratio",
                   "completions/mean_terminated_length", "reward", "kl")

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        run = ctx.run
        clip = s.col("completions/clipped_ratio")
        if not any(v is not None for v in clip):
            clip = s.col("response_clip_ratio")
        mlen = s.col("completions/mean_length")
        if not any(v is not None for v in mlen):
            mlen = s.col("completion_length")
        L = run.int_arg("max_completion_length")
        derived = not any(v is not None for v in clip) and L is not None and L > 0
        if derived and L is not None:
            # no clip ratio logged (older trl releases log completion_length only): a mean length at the run's cap means
            # every completion ran to it
            clip = [None if v is None or math.isnan(v) else float(v >= L) for v in mlen]
        rows = [i for i in range(s.n) if clip[i] is not None and not math.isnan(clip[i])]
        out: list[Finding] = []
        if rows:
            high = [clip[i] >= 0.9 for i in rows]
            streak, end = longest_streak(high)
            if all(high) or streak >= 3:
                lo = 0 if all(high) else end - streak + 1
                hi = len(rows) - 1 if all(high) else end
                idx = rows[lo:hi + 1]
                mean_clip = sum(clip[i] for i in idx) / len(idx)
                lens = [v for v in (mlen[i] for i in idx) if v is not None]
                scope = ("in the only logged step" if len(idx) == 1 else "in both logged steps" if len(idx) == 2
                         else f"in all {len(idx)} logged steps" if all(high) else
                         f"in {len(idx)} consecutive logged steps")
                term = s.col("completions/mean_terminated_length")
                no_eos = [i for i in idx if term[i] == 0]
                if derived and lens:
                    head = (f"the mean completion length was {fmt(min(lens))}"
                            + (f"-{fmt(max(lens))}" if max(lens) != min(lens) else "")
                            + f" {scope} ({s.span(idx[0], idx[-1])}), at max_completion_length {L}: every completion "
                              f"ran to the cap (no clipped ratio is logged)")
                else:
                    head = (f"completions/clipped_ratio was {fmt(mean_clip, 3)}{' on average' if len(idx) > 1 else ''} "
                            f"{scope} ({s.span(idx[0], idx[-1])}): almost every completion hit max_completion_length"
                            + (f" {L}" if L else "")
                            + (f" (mean length {fmt(sum(lens) / len(lens))})" if lens else ""))
                msg = (head
                       + (" and completions/mean_terminated_length was 0: not one completion ended with its end "
                          "token" if len(no_eos) == len(idx) else "")
                       + ". Truncated completions cannot finish their answer or close a format tag, so "
                         "format/accuracy rewards see only cut text.")
                few = all(high) and len(rows) <= FEW_ROWS and excerpt(s, rows)
                if few:
                    msg += few_rows_caveat(len(rows))
                fix = []
                if L:
                    new = 512 if L < 256 else 2 * L
                    fix.append(f"Raise --max_completion_length from {L} to {new} or more (step time and memory grow "
                               f"roughly linearly with it).")
                elif lens and mean_clip >= 0.999 and abs(sum(lens) / len(lens) - round(sum(lens) / len(lens))) < 0.05:
                    # every completion was clipped, so every one is exactly max_completion_length long: their mean
                    # length is the cap itself
                    cap = round(sum(lens) / len(lens))
                    # a framework's default only where that framework may have run (one told otherwise has its own)
                    fw = ctx.framework()[0]
                    defaults = {256: f", and {cap} is TRL's default, so the run likely leaves it unset",
                                512: f", and {cap} is ms-swift's default, so the run likely leaves it unset"}
                    if fw == "ms-swift":
                        defaults.pop(256)
                    elif fw is not None:
                        defaults.pop(512)
                    fix.append(f"Raise --max_completion_length from {cap} to {512 if cap < 256 else 2 * cap} or more: "
                               f"with every completion clipped, their mean length is the cap (computed)"
                               f"{defaults.get(cap, '')}. Step time and memory grow roughly linearly with it.")
                else:
                    fix.append("Raise --max_completion_length (its default is 512 in ms-swift, 256 in TRL).")
                fix.append("If the completions loop (see completions.jsonl with --log_completions true), add the "
                           "repetition reward or --repetition_penalty 1.05 instead; the soft_overlong reward "
                           "(with --soft_cache_length) penalises length smoothly.")
                if run.args.get("overlong_filter"):
                    fix.append("--overlong_filter true drops truncated completions from the loss: with nearly all "
                               "truncated, almost nothing is left to learn from (and KL can become NaN).")
                keys = ("completions/clipped_ratio", "response_clip_ratio", "completions/mean_length",
                        "completion_length", "completions/mean_terminated_length", "reward")
                ev = [s.evidence(idx[0], keys)] + ([s.evidence(idx[-1], keys)] if idx[-1] != idx[0] else [])
                out.append(self.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(idx[0]),
                                     severity=Severity.warning, confidence=EXCERPT_CONFIDENCE if few else None))
        lrows = [i for i in range(s.n) if mlen[i] is not None and not math.isnan(mlen[i])]
        if not out and len(lrows) >= 4:
            k = max(1, len(lrows) // 4)
            early = sum(mlen[i] for i in lrows[:k]) / k
            late = sum(mlen[i] for i in lrows[-k:]) / k
            if early >= 20 and late <= 0.3 * early:
                msg = (f"completions/mean_length collapsed from {fmt(early)} (first {k} logged steps) to {fmt(late)} "
                       f"(last {k}): the policy learned to answer ever shorter, which usually means a reward "
                       f"favours short outputs or the model is degenerating.")
                fix = ["Read the latest completions (--log_completions true): if they are empty or bare answers, "
                       "check which reward rises as length falls and rebalance --reward_weights; lower "
                       "--learning_rate; the cosine reward scales accuracy by length if short answers are wanted."]
                keys = ("completions/mean_length", "completion_length", "reward", "kl")
                out.append(self.make(message=msg, fix=fix, evidence=[s.evidence(lrows[0], keys),
                                                                    s.evidence(lrows[-1], keys)],
                                     count=len(lrows), seq=s.seq(lrows[0]), severity=Severity.warning))
        return out
