"""What the policy writes: empty, identical or looping completions (completions.jsonl), completions that
are all truncated or collapse in length (metrics), groups whose completions are nearly identical while
the policy drifts fast (KL jumps), and sampling settings that make groups degenerate.

completions.jsonl (``--log_completions true``) holds one column table per log call:
``{"step": [...], "prompt": [...], "completion": [...], "<RewardName>": [...], "advantages": [...], ...}``
(swift-notes §3). Consecutive rows with the same prompt form one GRPO group. The same table can be
written twice for one step; such repeats are skipped.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from ..model import COMPLETIONS, METRICS, Evidence, Finding, Severity, Where
from ..rules import FinishContext, Rule
from .metrics import SeriesRule, _arg_float, fmt, gen_batch, longest_streak, more_generations, num

MAX_TABLES = 20_000
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def looping(text: str) -> tuple[bool, str]:
    """Does the completion end in a loop (a unit of text repeated many times)?"""
    t = text.strip()
    if len(t) < 40:
        return False, ""
    tail = t[-600:]
    # a unit of 1..60 characters repeated at least 4 times (and covering 50%+ of the tail or 120+ chars)
    m = re.search(r"(.{1,60}?)\1{3,}$", tail, re.DOTALL)
    if m and len(m.group(0)) >= min(120, len(tail) // 2) and m.group(1).strip():
        return True, m.group(1)
    toks = _WORD.findall(t[-4000:])
    if len(toks) >= 60:
        grams = [tuple(toks[i:i + 4]) for i in range(len(toks) - 3)]
        distinct = len(set(grams)) / len(grams)
        if distinct < 0.25:
            return True, " ".join(max(set(grams), key=grams.count))
    return False, ""


class CompletionsDegenerate(Rule):
    """GD640: empty, identical-within-group or looping completions in completions.jsonl."""

    kinds = frozenset({COMPLETIONS})

    def __init__(self, meta):
        super().__init__(meta)
        self.seen: set[str] = set()
        self.tables = 0
        self.completions = 0
        self.groups = 0
        self.empty: list[tuple[Where, str, int]] = []   # (where, step, count)
        self.n_empty = 0
        self.identical_groups = 0
        self.identical_ex: list[tuple[Where, str, str, int, int]] = []
        self.n_loop = 0
        self.loop_ex: list[tuple[Where, str, str]] = []
        self.first_seq = 0

    def feed(self, kind: str, payload: Any) -> None:
        if kind != COMPLETIONS or self.tables >= MAX_TABLES:
            return
        row, where = payload
        comps = row.get("completion")
        if not isinstance(comps, list):
            return
        prompts = row.get("prompt")
        if not isinstance(prompts, list) or len(prompts) != len(comps):
            prompts = [None] * len(comps)
        comps = [c if isinstance(c, str) else _text_of(c) for c in comps]
        key = hashlib.blake2b(repr((row.get("step"), comps[:8], [str(p)[:200] for p in prompts[:2]])).encode(),
                              digest_size=12).hexdigest()
        if key in self.seen:
            return
        self.seen.add(key)
        self.tables += 1
        step = row.get("step")
        step = str(step[0]) if isinstance(step, list) and step else str(step) if step is not None else "?"
        self.completions += len(comps)
        # groups: consecutive equal prompts
        groups: list[list[str]] = []
        last = object()
        for p, c in zip(prompts, comps):
            pk = p if p is not None else last
            if groups and pk == last:
                groups[-1].append(c)
            else:
                groups.append([c])
            last = pk if p is not None else last
        n_empty = sum(1 for c in comps if not c.strip())
        if n_empty:
            self.n_empty += n_empty
            if len(self.empty) < 3:
                self.empty.append((where, step, n_empty))
        for g in groups:
            if len(g) < 2:
                continue
            self.groups += 1
            nonempty = [c for c in g if c.strip()]
            if len(nonempty) >= 2 and len(set(nonempty)) == 1 and len(nonempty) == len(g):
                self.identical_groups += 1
                if len(self.identical_ex) < 3:
                    self.identical_ex.append((where, step, nonempty[0], len(g), len(g)))
        for c in comps:
            lp, unit = looping(c)
            if lp:
                self.n_loop += 1
                if len(self.loop_ex) < 3:
                    self.loop_ex.append((where, step, unit))

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if not self.tables or not self.completions:
            return []
        run = ctx.run
        parts: list[str] = []
        fix: list[str] = []
        ev: list[Evidence] = []
        sev = None
        empty_frac = self.n_empty / self.completions
        loop_frac = self.n_loop / self.completions
        ident_frac = self.identical_groups / self.groups if self.groups else 0.0
        if self.n_empty and (empty_frac >= 0.25 or self.n_empty >= 8):
            parts.append(f"{self.n_empty} of {self.completions} logged completions are empty "
                         f"({fmt(100 * empty_frac, 3)}%)")
            sev = Severity.error if empty_frac >= 0.5 else Severity.warning
            for w, st, k in self.empty:
                ev.append(Evidence(w.path, w.line, f"step {st}: {k} empty completion(s)"))
            fix.append("Empty completions mean the model emits EOS at once: check the chat template (--template) and "
                       "that the prompt ends with the assistant turn; a model collapsed this way needs a restart from an "
                       "earlier checkpoint with a lower --learning_rate.")
        if self.n_loop and (loop_frac >= 0.25 or self.n_loop >= 8):
            parts.append(f"{self.n_loop} of {self.completions} completions end in a repetition loop "
                         f"({fmt(100 * loop_frac, 3)}%)")
            s2 = Severity.error if loop_frac >= 0.5 else Severity.warning
            sev = max(sev, s2) if sev is not None else s2
            for w, st, unit in self.loop_ex:
                ev.append(Evidence(w.path, w.line, f"step {st}: repeats {unit[:80]!r}"))
            fix.append("Penalise loops: add the built-in repetition reward (--reward_funcs ... repetition) and/or "
                       "--repetition_penalty 1.05; loops usually also run into max_completion_length.")
        if self.identical_groups and self.groups >= 2 and ident_frac >= 0.5:
            parts.append(f"in {self.identical_groups} of {self.groups} groups every completion is identical "
                         f"({fmt(100 * ident_frac, 3)}%)")
            sev = sev if sev is not None else Severity.warning
            for w, st, text, k, _ in self.identical_ex:
                ev.append(Evidence(w.path, w.line, f"step {st}: {k} x {text[:120]!r}"))
            temp = _arg_float(run, "temperature")
            g = run.int_arg("num_generations")
            fix.append("Identical completions in a group all get the same reward, so the group has no advantage: "
                       + (f"--temperature {fmt(temp)} is low, use 0.9-1.0" if temp is not None and temp < 0.7
                          else "raise --temperature towards 1.0")
                       + (f" and/or {more_generations(run, g)}" if g else "") + ".")
        if not parts:
            return []
        seen_txt: set[str] = set()
        ev = [e for e in ev if not (e.text in seen_txt or seen_txt.add(e.text))]
        msg = "The logged completions are degenerate: " + "; ".join(parts) + "."
        return [self.make(message=msg, fix=fix, evidence=ev[:6], count=self.tables, severity=sev,
                          seq=self.first_seq)]


def _text_of(c: Any) -> str:
    """A completion logged as a message list: [{'role': 'assistant', 'content': '...'}]."""
    if isinstance(c, list):
        return " ".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in c)
    if isinstance(c, dict):
        return str(c.get("content", ""))
    return "" if c is None else str(c)


class CompletionsTruncated(SeriesRule):
    """GD641: completions/clipped_ratio ~1 (all truncated) or completion length collapsing."""

    want_rewards = False
    series_keys = ("completions/mean_length", "completions/clipped_ratio", "completion_length", "response_clip_ratio",
                   "reward", "kl")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        run = ctx.run
        clip = s.col("completions/clipped_ratio")
        if not any(v is not None for v in clip):
            clip = s.col("response_clip_ratio")
        mlen = s.col("completions/mean_length")
        if not any(v is not None for v in mlen):
            mlen = s.col("completion_length")
        rows = [i for i in range(s.n) if clip[i] is not None and not math.isnan(clip[i])]
        L = run.int_arg("max_completion_length")
        out: list[Finding] = []
        if rows:
            high = [clip[i] >= 0.9 for i in rows]
            streak, end = longest_streak(high)
            if (all(high) and len(rows) >= 2) or streak >= 3:
                lo = 0 if all(high) else end - streak + 1
                hi = len(rows) - 1 if all(high) else end
                idx = rows[lo:hi + 1]
                mean_clip = sum(clip[i] for i in idx) / len(idx)
                lens = [mlen[i] for i in idx if mlen[i] is not None]
                scope = (f"in all {len(idx)} logged steps" if all(high) else f"in {len(idx)} consecutive logged steps")
                msg = (f"completions/clipped_ratio was {fmt(mean_clip, 3)} on average {scope} "
                       f"({s.span(idx[0], idx[-1])}): almost every completion hit max_completion_length"
                       + (f" {L}" if L else "")
                       + (f" (mean length {fmt(sum(lens) / len(lens))})" if lens else "")
                       + ". Truncated completions cannot finish their answer or close a format tag, so "
                         "format/accuracy rewards see only cut text.")
                fix = []
                if L:
                    new = 512 if L < 256 else 2 * L
                    fix.append(f"Raise --max_completion_length from {L} to {new} or more (step time and memory grow "
                               f"roughly linearly with it).")
                else:
                    fix.append("Raise --max_completion_length (the ms-swift default is 512).")
                fix.append("If the completions loop (see completions.jsonl with --log_completions true), add the "
                           "repetition reward or --repetition_penalty 1.05 instead; the soft_overlong reward "
                           "(with --soft_cache_length) penalises length smoothly.")
                if run.args.get("overlong_filter"):
                    fix.append("--overlong_filter true drops truncated completions from the loss: with nearly all "
                               "truncated, almost nothing is left to learn from (and KL can become NaN).")
                keys = ("completions/clipped_ratio", "response_clip_ratio", "completions/mean_length",
                        "completion_length", "reward")
                ev = [s.evidence(idx[0], keys)] + ([s.evidence(idx[-1], keys)] if idx[-1] != idx[0] else [])
                out.append(self.make(message=msg, fix=fix, evidence=ev, count=len(idx), seq=s.seq(idx[0]),
                                     severity=Severity.warning))
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


class LowGroupDiversity(SeriesRule):
    """GD642: within-group reward spread tiny next to the batch spread, with a fast-drifting policy (KL jump)."""

    series_keys = ("reward", "reward_std", "kl", "grad_norm", "learning_rate", "completions/mean_length")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        run = ctx.run
        rstd, kl, gn = s.col("reward_std"), s.col("kl"), s.col("grad_norm")
        rows = []
        for i in range(s.n):
            if rstd[i] is None or math.isnan(rstd[i]):
                continue
            batch = [c[i] for c in s.rstd.values() if c[i] is not None and not math.isnan(c[i])]
            if not batch:
                continue
            b = max(batch)
            rows.append((i, rstd[i], b))
        if len(rows) < 2:
            return []
        low = [(i, r, b) for i, r, b in rows if b >= 0.05 and 0 < r <= 0.2 * b]
        if len(low) * 2 < len(rows):
            return []
        # KL jump: from about 0 to a large value between consecutive logged steps
        jump = None
        kl_rows = [i for i in range(s.n) if kl[i] is not None and not math.isnan(kl[i])]
        for a, b in zip(kl_rows, kl_rows[1:]):
            if kl[b] - kl[a] >= 0.2 and kl[b] >= 0.3:
                jump = (a, b)
                break
        gmax = max((gn[i] for i in range(s.n) if gn[i] is not None and not math.isnan(gn[i])), default=None)
        if jump is None and (gmax is None or gmax < 10):
            return []
        i0 = low[0][0]
        rs = [r for _, r, _ in low]
        bs = [b for _, _, b in low]
        msg = (f"Within-group reward_std was only {fmt(min(rs))}-{fmt(max(rs))} while the batch-level reward std was "
               f"{fmt(min(bs))}-{fmt(max(bs))} in {len(low)} of {len(rows)} logged steps: the completions of each "
               f"prompt are nearly the same (the scores differ between prompts, not within a group), so the "
               f"normalised advantages are mostly noise.")
        if jump:
            a, b = jump
            msg += f" Meanwhile kl jumped from {fmt(kl[a])} ({s.label(a)}) to {fmt(kl[b])} ({s.label(b)})"
            msg += f" with grad_norm up to {fmt(gmax)}" if gmax is not None else ""
            msg += ": the policy is drifting fast on that noise."
        elif gmax is not None:
            msg += f" grad_norm reached {fmt(gmax)}: large updates driven by that noise."
        mlen = [v for v in s.col("completions/mean_length") if v is not None]
        if mlen and max(mlen) <= 16:
            msg += f" Completions are only {fmt(min(mlen))}-{fmt(max(mlen))} tokens long."
        fix = []
        lr = _arg_float(run, "learning_rate")
        lr_seen = next((v for v in s.col("learning_rate") if v), None)
        lr = lr or lr_seen
        tuner = run.tuner()
        if lr:
            fix.append(f"Lower --learning_rate from {fmt(lr)} to {fmt(lr / 10)}"
                       + (" (full-parameter GRPO usually needs about 1e-6)" if tuner == "full" or lr <= 2e-5 else "")
                       + ".")
        else:
            fix.append("Lower --learning_rate substantially (full-parameter GRPO usually needs about 1e-6).")
        beta = _arg_float(run, "beta")
        fix.append(f"Keep the policy near the reference: --beta {fmt(beta) if beta is not None else '0.04 (default)'}"
                   f" -> {fmt((beta or 0.04) * 2)}, and --max_grad_norm 0.5.")
        g = run.int_arg("num_generations")
        temp = _arg_float(run, "temperature")
        fix.append("Make rewards differ within a group: "
                   + (f"{more_generations(run, g)}, " if g else "more generations per prompt (--num_generations 8+), ")
                   + (f"--temperature {fmt(temp)} -> 1.0, " if temp is not None and temp < 0.9 else "")
                   + "and a finer-grained reward (continuous scores instead of a few levels).")
        keys = ["reward", "reward_std"] + [f"rewards/{n}/std" for n in s.rstd][:2] + ["kl", "grad_norm"]
        ev = [s.evidence(i0, keys)]
        if jump:
            ev.append(s.evidence(jump[1], keys))
        sev = Severity.error if jump else Severity.warning
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(low), seq=s.seq(i0), severity=sev)]


class SamplingConfig(Rule):
    """GD643 (num_generations < 4) / GD644 (temperature < 0.3): settings that make groups degenerate.

    Only reported for runs that trained (metrics or completions were seen): on a run that failed
    before training these would be noise next to the real error."""

    kinds = frozenset({METRICS, COMPLETIONS})

    def __init__(self, meta):
        super().__init__(meta)
        self.trained = False
        self.what = meta.options.get("what", "num_generations")

    def feed(self, kind: str, payload: Any) -> None:
        self.trained = True

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if not (self.trained or ctx.metrics_steps or ctx.preflight):
            return []
        run = ctx.run
        if self.what == "num_generations":
            g = run.int_arg("num_generations")
            if g is None or g < 2 or g >= 4:
                return []
            msg = (f"--num_generations {g}: GRPO compares each completion with only {g - 1} other(s) of the same "
                   f"prompt, so the group mean and std are noisy and many groups end up with equal rewards. 4 or more "
                   f"gives a stable advantage estimate.")
            fix = [more_generations(run, g, 4) + "; seed guides recommend 4 or more, with --temperature about 0.9."]
            return [self.make(message=msg, fix=fix, severity=Severity.warning)]
        temp = _arg_float(run, "temperature")
        if temp is None or temp >= 0.3:
            return []
        g = run.int_arg("num_generations")
        msg = (f"--temperature {fmt(temp)}: sampling is close to greedy, so the {g or 'num_generations'} completions "
               f"of a prompt are nearly identical and get the same reward (zero advantage).")
        fix = ["Use --temperature 0.9-1.0 for GRPO rollouts (ms-swift's default is 0.9); lower it only for "
               "evaluation."]
        return [self.make(message=msg, fix=fix, severity=Severity.warning)]


class StepTimeGrowing(SeriesRule):
    """GD650: time per step grows clearly over the run (per-step step_time from trl >= 0.26 / ms-swift 4.x)."""

    want_rewards = False
    series_keys = ("step_time", "completions/mean_length", "completion_length")

    def finish(self, ctx: FinishContext) -> list[Finding]:
        s = self.s
        st = s.col("step_time")
        rows = [i for i in range(1, s.n) if st[i] is not None and st[i] > 0]   # row 0 holds start-up costs
        if len(rows) < 8:
            return []
        k = max(2, len(rows) // 4)
        early = sum(st[i] for i in rows[:k]) / k
        late = sum(st[i] for i in rows[-k:]) / k
        if early <= 0 or late < 2 * early or late - early < 1.0:
            return []
        msg = (f"step_time grew from {fmt(early)} s (first {k} logged steps after the first) to {fmt(late)} s (last "
               f"{k}), {fmt(late / early, 2)}x.")
        ml = s.col("completions/mean_length")
        if not any(v is not None for v in ml):
            ml = s.col("completion_length")
        le = [ml[i] for i in rows[:k] if ml[i] is not None]
        ll = [ml[i] for i in rows[-k:] if ml[i] is not None]
        fix = []
        L = ctx.run.int_arg("max_completion_length")
        if le and ll and sum(ll) / len(ll) >= 1.5 * (sum(le) / len(le)):
            a, b = sum(le) / len(le), sum(ll) / len(ll)
            msg += (f" completions/mean_length grew from {fmt(a)} to {fmt(b)} over the same steps: generation and "
                    f"loss time grow roughly linearly with completion length.")
            fix.append("Longer completions are the cause: cap them with --max_completion_length"
                       + (f" (now {L})" if L else "") + ", or add the soft_overlong reward (with "
                       "--soft_cache_length) or the cosine reward to discourage needless length.")
        else:
            fix.append("Completion length did not grow as much: look for memory pressure (vLLM KV cache preemption "
                       "warnings, growing memory(GiB)), CPU offload (--offload_model / --offload_optimizer) or "
                       "a slow reward function / reward model.")
        fix.append("Compare step_time with completions/mean_length in logging.jsonl to confirm.")
        ev = [s.evidence(rows[0], ("step_time", "completions/mean_length")),
              s.evidence(rows[-1], ("step_time", "completions/mean_length"))]
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(rows), seq=s.seq(rows[0]),
                          severity=Severity.warning)]
