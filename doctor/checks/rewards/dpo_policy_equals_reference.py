"""GD607: a preference trainer (trl's DPO and the trainers built on it) whose implicit rewards and margins stay exactly
0 step after step, with the loss at ln 2: the policy's log-probabilities equal the reference's on every pair, so the
policy is not moving away from the reference (or the reference is the policy itself)."""
from __future__ import annotations

import math

from ...engine.state import RunState
from ...model import Finding
from .._series import SeriesRule, fmt

KEYS = ("rewards/chosen", "rewards/rejected", "rewards/margins", "loss")
LN2 = math.log(2)          # DPO's sigmoid loss -log(sigmoid(0)) when chosen and rejected log-ratios cancel
ZERO = 1e-6
MIN_ROWS = 3               # the first logged step has policy == reference by construction: a few more must agree


class DpoPolicyEqualsReference(SeriesRule):
    """GD607: rewards/chosen, rewards/rejected and rewards/margins all 0 in MIN_ROWS or more logged rows."""

    series_keys = KEYS
    want_rewards = False

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        chosen, rejected, margins, loss = (s.col(k) for k in KEYS)
        rows = [i for i in range(s.n) if chosen[i] is not None and rejected[i] is not None and margins[i] is not None]
        if len(rows) < MIN_ROWS:
            return []
        if any(abs(chosen[i]) > ZERO or abs(rejected[i]) > ZERO or abs(margins[i]) > ZERO for i in rows):
            return []
        losses = [loss[i] for i in rows if loss[i] is not None and not math.isnan(loss[i])]
        at_ln2 = bool(losses) and all(abs(v - LN2) < 5e-4 for v in losses)
        msg = (f"rewards/chosen, rewards/rejected and rewards/margins are exactly 0 in every one of the {len(rows)} "
               f"logged rows ({s.span(rows[0], rows[-1])})"
               + (f", and the loss is {fmt(losses[0])} in each: ln 2, DPO's loss when the two log-ratios cancel"
                  if at_ln2 else "")
               + ". DPO's implicit reward is beta x (log-probability under the policy - under the reference): 0 for "
                 "every chosen and rejected answer means the policy scores every pair exactly as the reference does. "
                 "One step can show that (the policy starts as the reference); step after step, the policy is not "
                 "moving, or the reference is the policy itself.")
        fix = ["Check that the weights train: the trainable-parameter count is above 0 (with LoRA, the adapter is "
               "attached and its target modules exist) and the learning rate is not 0 after warmup.",
               "Check the reference: a separate copy of the starting model (or, with PEFT, the base with the adapter "
               "off); precomputed reference log-probabilities must come from the reference, not the policy, and some "
               "trl releases dropped them (trl#1961: update trl when using precompute_ref_log_probs).",
               "Then compare logps/chosen with the reference's on one batch: equal values confirm the policy never "
               "changed."]
        ev = [s.evidence(i, KEYS) for i in dict.fromkeys((rows[0], rows[-1]))]
        return [self.make(message=msg, fix=fix, evidence=ev, count=len(rows), seq=s.seq(rows[0]))]
