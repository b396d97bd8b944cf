"""GD629: trl's classic PPOTrainer warns that its KL estimate went negative (ppo_trainer.py step: mean_kl < -1)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def ppo_kl_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    values = [float(h.groups["kl"]) for h in hits if h.groups.get("kl")]
    lowest = min(values) if values else None
    msg = ("trl's PPOTrainer estimated a negative KL between the policy and the reference model"
           + (f" ({lowest:g} at its lowest, {len(values)} warning(s), read from the log)" if lowest is not None else "")
           + ": sampled from the policy itself that estimate is positive on average, so the sampled tokens are not "
             "the policy's own samples (generation settings such as top_k, top_p, min_length or forced tokens), or "
             "the policy moves away fast (a reward it exploits, a high learning rate). trl warns below -1 as a "
             "precursor of a failed run.")
    fix = ("Generate with plain sampling from the policy (do_sample=True, top_k=0, top_p=1.0, no min_length or forced "
           "EOS) as trl's PPO examples do; LLaMA-Factory's PPO stage takes its generation settings from the same "
           "generating arguments (top_k, top_p, temperature).",
           "If the settings are plain: lower the learning rate and check the reward model on held-out pairs (a poor "
           "reward model is what the policy exploits); stop the run while the KL keeps falling.")
    return Diagnosis(message=msg, fix=fix)
