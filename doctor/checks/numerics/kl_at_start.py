"""GD635: a KL far from zero in the first steps of a ZeRO-3 run: the reference and the policy disagree from the start."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from .._series import SeriesRule, fmt
from ..memory._facts import zero_stage
from .kl_spike import finite

# DeepSpeed ZeRO-3's prefetch coordinator (runtime/zero/partitioned_param_coordinator.py trace_prologue) prints it
# when the modules run in another order than the recorded trace: harmless by itself, but only ZeRO-3 prints it
_TRACE_CACHE = "Invalidate trace cache @ step"


def _zero3_sign(ctx: RunState) -> str | None:
    """What shows that the run used ZeRO-3: the DeepSpeed setting it was given, or the coordinator's line."""
    ds = ctx.run.args.get("deepspeed")
    if isinstance(ds, str) and zero_stage(ds)[0] == 3:
        return f"--deepspeed {ds}"
    for tail in ctx.tails.values():
        for line in tail:
            if _TRACE_CACHE in line.text:
                return f"DeepSpeed ZeRO-3's `{line.text.strip()[:120]}` line"
    return None


class KlAtStart(SeriesRule):
    """GD635: kl of many nats in the first logged steps (step <= max_step or epoch 0) under ZeRO-3."""

    series_keys = ("kl", "loss", "grad_norm", "epoch")
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        floor, max_step = float(o.get("floor", 10.0)), int(o.get("max_step", 10))
        epochs = s.col("epoch")

        def early(i: int) -> bool:
            step = s.steps[i]
            if step is not None:
                return step <= max_step
            return epochs[i] is not None and epochs[i] <= 0.01

        hits = [(i, v) for i, v in finite(s.col("kl"))[:3] if v >= floor and early(i)]
        if not hits:
            return []
        sign = _zero3_sign(ctx)
        if sign is None:
            return []
        i, v = max(hits, key=lambda t: t[1])
        loss, grad = s.col("loss")[i], s.col("grad_norm")[i]
        with_rest = "".join(f", {k} {fmt(x)}" for k, x in (("loss", loss), ("grad_norm", grad)) if x is not None)
        msg = (f"kl was {fmt(v)} at {s.label(i)}, one of the run's first steps{with_rest}. At the start of GRPO the "
               f"reference model holds the policy's initial weights, so the per-token KL between them is about 0 "
               f"(healthy runs log 0 to 0.001 in their first steps): a KL of {fmt(v)} means the two give the same "
               f"tokens very different log-probabilities from the first step, so one of them ran with weights that "
               f"are not the policy's. The run uses ZeRO-3 ({sign}): a forward pass that runs outside the engine "
               f"that gathers the partitioned parameters (a reference model DeepSpeed did not prepare, a log-prob or "
               f"generation path of the trainer's own code) computes with empty or stale shards.")
        fix = ["Run the same command with ZeRO-2 (or without DeepSpeed) and compare the first step's kl: about 0 "
               "there confirms that ZeRO-3's parameter gathering is the cause.",
               "Under ZeRO-3, let DeepSpeed prepare the reference model too (trl's prepare_deepspeed does it for "
               "GRPOTrainer's ref_model) and run every forward and generate of custom trainer code inside the engine "
               "(unwrap_model_for_generation, deepspeed.zero.GatheredParameters)."]
        keys = tuple(k for k in ("kl", "loss", "grad_norm") if s.col(k)[i] is not None)
        return [self.make(message=msg, fix=fix, evidence=[s.evidence(i, keys)], seq=s.seq(i))]
