"""GD651: each training step takes so long that the run needs days, read from the logged step times; GD652: one stage
of a verl step takes half an hour or more."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding, Severity
from ...rules import Diagnosis, Hit
from ...values import as_number
from .._series import SeriesRule, fmt
from .._units import duration

SLOW_STEP_S = 600.0        # one optimisation step of ten minutes or more is slow on any model size
LONG_REMAINING_S = 72 * 3600.0   # at the logged pace, the steps left need three days or more...
MINUTES_STEP_S = 120.0     # ...with steps of minutes each: pre-training plans weeks of seconds-long steps on purpose
SPEED_KEY = "train_speed(iter/s)"   # ms-swift's rows (swift/trainers/mixin.py): iterations per second


class StepPace(SeriesRule):
    """GD651: a step of ten minutes or more, or a pace at which the remaining steps take three days or more."""

    want_rewards = False
    series_keys = ("step_time", SPEED_KEY, "max_steps", "reward", "completions/mean_length", "completion_length")

    def _step_seconds(self) -> list[tuple[int, float]]:
        """(row, seconds per step) of every row that tells it: step_time (trl >= 0.26, ms-swift 4.x, Megatron's and
        verl's rows), else 1 / train_speed(iter/s) (ms-swift's rows)."""
        s = self.s
        times, speeds = s.col("step_time"), s.col(SPEED_KEY)
        out = []
        for i in range(s.n):
            t = times[i]
            if t is not None and t > 0:
                out.append((i, t))
            elif speeds[i] is not None and speeds[i] > 0:
                out.append((i, 1.0 / speeds[i]))
        return out

    def finish(self, ctx: RunState) -> list[Finding]:
        s = self.s
        timed = self._step_seconds()
        if len(timed) >= 3:
            timed = timed[1:]   # the first logged step holds start-up costs (compilation, the first weight sync)
        if not timed:
            return []
        # the median as statistics.median computes it (the middle value, or the mean of the two middle ones): importing
        # statistics (with fractions, decimal and random) cost ~5 ms of every watch whose run logs step times
        times = sorted(t for _, t in timed)
        half = len(times) // 2
        pace = times[half] if len(times) % 2 else (times[half - 1] + times[half]) / 2
        last = timed[-1][0]
        total = next((int(v) for v in reversed(s.col("max_steps")) if v is not None and v > 0), None) \
            or s.max_steps or ctx.run.int_arg("max_steps")
        step = s.steps[last]
        remaining = (total - step) * pace if total and step is not None and total > step else None
        # the days-left reading only for a run that samples (its rows hold a reward): an RL run of minutes per step
        # for days is what users ask about; a pre-training or SFT run of many steps is long by plan
        sampled = any(v is not None for v in s.col("reward"))
        if pace < SLOW_STEP_S and (remaining is None or remaining < LONG_REMAINING_S or pace < MINUTES_STEP_S
                                   or not sampled):
            return []
        rows = f"the median of {len(timed)} logged steps" if len(timed) > 1 else "the one logged step"
        msg = f"A training step takes {fmt(pace, 4)} s ({duration(pace)}, {rows})"
        if remaining is not None:
            msg += (f"; {total - step} of {total} steps remain (read from {s.label(last)}): "
                    f"{duration(remaining)} at this pace (computed)")
        msg += "."
        lengths = s.col("completions/mean_length")
        if not any(v is not None for v in lengths):
            lengths = s.col("completion_length")
        mean_length = next((v for v in reversed(lengths) if v is not None), None)
        cap = ctx.run.int_arg("max_completion_length")
        if mean_length is not None:
            msg += (f" Completions average {fmt(mean_length, 4)} tokens"
                    + (f" of max_completion_length {cap}" if cap else "")
                    + ": in GRPO a step's time is mostly generation, which grows with completion length and with"
                      " the number of completions per step.")
        fix = ["Time the parts of one step before changing settings: generation (vLLM or HF generate), the reward "
               "functions, the reference model's log-probs, the update, and (server mode) the weight sync; the slowest "
               "one is what to change."]
        if mean_length is not None and cap and mean_length >= 0.8 * cap:
            fix.append(f"Most completions reach max_completion_length {cap}: a lower cap, or a length penalty in the "
                       f"reward, shortens every step.")
        fix.append("Generation on the training GPUs without vLLM is the usual cause of minutes per step; with vLLM, "
                   "more rollout GPUs (tensor or data parallel) or fewer completions per step (num_generations x "
                   "prompts) shorten it.")
        keys = ("step_time", SPEED_KEY, "completions/mean_length")
        return [self.make(message=msg, fix=fix, evidence=[s.evidence(last, keys)], count=len(timed),
                          seq=s.seq(last), severity=Severity.warning)]


# verl times each stage of a step (verl/trainer/ppo/ray_trainer.py `with _timer(name, timing_raw)`, printed by
# metric_utils.compute_timing_metrics as timing_s/<name>); what each stage runs
_VERL_STAGE = lazyre.compile(r"\btiming_s/(?P<stage>[a-z_]+):\s*(?P<seconds>\d+(?:\.\d+)?)")
VERL_STAGES = {
    "gen": "rollout generation (vLLM or SGLang): it grows with response length and rollout.n",
    "adv": ("the driver process's reward stage: the reward model and the reward function score every response, then "
            "compute_advantage runs; a slow reward function or very long responses make it dominate"),
    "reward": "the reward function over every response",
    "ref": "the reference model's forward pass over every response",
    "old_log_prob": "the actor's forward pass for the old log-probabilities",
    "values": "the critic's forward pass",
    "update_actor": "the actor's training passes (ppo_epochs x mini-batches)",
    "update_critic": "the critic's training passes",
    "testing": "validation (generation over the validation set)",
    "save_checkpoint": "saving the checkpoint",
    "step": "the whole step",
}
SLOW_STAGE_S = 1800.0   # half an hour in one stage of one step


def verl_stage_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    """GD652: the slowest verl stage among the matched lines, when one step spent half an hour or more in it."""
    stages: list[tuple[float, str, Hit]] = []
    for hit in hits:
        text = hit.line.text if hit.line is not None else hit.evidence.text
        stages += [(float(m.group("seconds")), m.group("stage"), hit) for m in _VERL_STAGE.finditer(text)
                   if m.group("stage") in VERL_STAGES]
    # the stage that took the time; the whole step only when no stage was printed
    parts = [s for s in stages if s[1] != "step"] or stages
    worst = max(parts, key=lambda s: s[0], default=None)
    if worst is None or worst[0] < SLOW_STAGE_S:
        return None
    seconds, stage, hit = worst
    msg = (f"One step spent {fmt(seconds, 6)} s ({duration(seconds)}) in verl's `{stage}` stage "
           f"(timing_s/{stage}): {VERL_STAGES[stage]}.")
    fix = ["Compare it with the other timing_s/ values of the same step (gen, ref, old_log_prob, update_actor): the "
           "stage that dominates is the one to change.", *stage_fix(stage)]
    # the slowest stage's line first, when it is not already the first matched line
    return Diagnosis(message=msg, fix=tuple(fix), evidence=() if hit is hits[0] else (hit.evidence,))


def stage_fix(stage: str, args: dict | None = None) -> list[str]:
    """What shortens verl's stage ``stage`` (its own configuration keys, with the run's values when ``args`` has
    them)."""
    if stage in ("adv", "reward"):
        return ["Time the reward function on a batch of long responses outside training; make it vectorised or "
                "parallel (a reward manager that scores in batch), and prefer an advantage estimator that does "
                "not loop over tokens on the driver (algorithm.adv_estimator=grpo)."]
    if stage == "gen":
        args = args or {}
        share = as_number(args.get("actor_rollout_ref.rollout.gpu_memory_utilization"))
        length = as_number(args.get("data.max_response_length"))
        more = (f"actor_rollout_ref.rollout.gpu_memory_utilization={min(0.9, round(share + 0.3, 2)):g} (was {share:g}): "
                f"a larger KV cache runs more sequences per forward pass; " if share is not None and share < 0.6
                else "")
        return [f"{more}{'cap' if more else 'Cap'} data.max_response_length"
                + (f" (now {int(length)})" if length else "")
                + ", or give the rollout more GPUs (actor_rollout_ref.rollout.tensor_model_parallel_size) and more KV "
                  "cache (actor_rollout_ref.rollout.gpu_memory_utilization)."]
    if stage in ("update_actor", "old_log_prob", "ref"):
        return ["Larger micro-batches for the passes (actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, or "
                "use_dynamic_bsz with a larger ppo_max_token_len_per_gpu) and no parameter or optimizer offload "
                "(actor_rollout_ref.actor.fsdp_config.param_offload / optimizer_offload False) while memory allows."]
    return []


def stage_times(lines: list) -> tuple[dict[str, float], str | None, object | None]:
    """verl's stage timings of one step pasted as `timing_s/<stage>: <seconds>` (one per line or several on one), the
    slowest stage (the whole step aside) and its line; ({}, None, None) when the paste holds none."""
    times: dict[str, float] = {}
    where: dict[str, object] = {}
    for ln in lines:
        for m in _VERL_STAGE.finditer(ln.text):
            if m.group("stage") in VERL_STAGES:
                times[m.group("stage")] = float(m.group("seconds"))
                where[m.group("stage")] = ln
    worst = max((k for k in times if k != "step"), key=lambda k: times[k], default=None)
    return times, worst, (where[worst] if worst is not None else None)
