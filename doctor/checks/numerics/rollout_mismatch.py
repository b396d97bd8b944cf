"""GD628: the rollout engine's token probabilities differ from the trainer's (training/inference mismatch)."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from .._series import SeriesRule, fmt
from .kl_spike import finite

KEYS = ("rollout_correction/k3_kl", "rollout_correction/kl")


class RolloutMismatch(SeriesRule):
    """GD628: the KL between the rollout policy (vLLM) and the training policy is large in the median step."""

    series_keys = KEYS + ("rollout_correction/ppl_ratio",)
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        o = self.meta.options
        s = self.s
        key = next((k for k in KEYS if finite(s.col(k))), None)
        if key is None:
            return []
        vals = finite(s.col(key))
        if len(vals) < int(o.get("min_steps", 3)):
            return []
        ordered = sorted(v for _, v in vals)
        median = ordered[len(ordered) // 2]
        if median < float(o.get("median", 0.01)):
            return []
        worst = max(vals, key=lambda t: t[1])
        is_mode = ctx.run.args.get("rollout_importance_sampling_mode")
        msg = (f"{key} (the KL between the rollout engine's and the trainer's token probabilities of the same "
               f"completions) had a median of {fmt(median)} over {len(vals)} logged steps, up to {fmt(worst[1])} at "
               f"{s.label(worst[0])}: the completions are sampled from a noticeably different policy than the one "
               f"trained, so the policy gradient is biased (off-policy).")
        fix = ["Check that vLLM and the trainer load the same weights in the same dtype (weight sync after each step; "
               "the same --torch_dtype for the rollout server), and that the rollout uses no quantisation.",
               "Correct for it: --rollout_importance_sampling_mode token_truncate (ms-swift >= 3.11, vLLM >= 0.10.2; now "
               f"{is_mode if is_mode else 'off'}), which reweights each token by the probability ratio."]
        ev = [s.evidence(vals[0][0], (key,)), s.evidence(worst[0], (key, "rollout_correction/ppl_ratio"))]
        return [self.make(message=msg, fix=fix, evidence=ev[:1] if vals[0][0] == worst[0] else ev,
                          seq=s.seq(vals[0][0]))]
