"""A KL said to turn NaN in a verl run: its KL loss's own arithmetic, said with the key that selects it. Knowledge from
verl's source: ``actor_rollout_ref.actor.kl_loss_type`` is ``low_var_kl`` in verl/trainer/config/ppo_trainer.yaml
("# for grpo"), and ``core_algos.kl_penalty`` computes it as ``kl = ref_log_probs - log_probs; (kl.exp() - kl - 1)``
clamped to [-10, 10]; later releases first clamp ``kl`` to [-20, 20] ("For numerical stability"). Without that clamp a
sampled token the policy gives a log-probability of -inf makes ``kl`` inf and ``inf - inf`` NaN, which the outer clamp
keeps. Pure: words in, sentences out."""
from __future__ import annotations

from ... import lazyre

_KL = lazyre.compile(r"(?i)(?<![a-z])kl(?:_loss)?(?![a-z])")

CAUSE = ("In verl the KL loss is actor_rollout_ref.actor.kl_loss_type, low_var_kl unless set: core_algos.kl_penalty "
         "takes exp(ref_log_prob - log_prob), and releases that do not clamp that difference first (later ones clamp "
         "it to ±20 for numerical stability) return NaN where the policy gives a sampled token a log-probability of "
         "-inf (inf - inf); once the NaN reaches the weights, completions most often come out as token id 0 (\"!\" "
         "in Qwen's vocabulary).")
FIX = ("Meanwhile: install a verl release whose core_algos.kl_penalty clamps the log-ratio before exp() (its "
       "`.clamp(-20.0, 20.0)` line), or set actor_rollout_ref.actor.kl_loss_type=kl (no exp), and resume from a "
       "checkpoint saved before the first NaN.")


def kl_nan(framework: str | None, texts: list[str], args: dict, *, sampled_nan: bool = False) -> tuple[str, str] | None:
    """(cause, fix) when a verl run's words name the KL beside the NaN (or ``sampled_nan``: completions of token id 0,
    what NaN probabilities sample) and its settings leave low_var_kl on; else None (another kl_loss_type set, or the
    KL loss off)."""
    if framework != "verl" or not (sampled_nan or any(_KL.search(t) for t in texts)):
        return None
    kind = str(args.get("actor_rollout_ref.actor.kl_loss_type", "low_var_kl")).strip("'\"").lower()
    if kind != "low_var_kl" or str(args.get("actor_rollout_ref.actor.use_kl_loss", "")).lower() == "false":
        return None
    return CAUSE, FIX


__all__ = ["CAUSE", "FIX", "kl_nan"]
