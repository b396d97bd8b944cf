"""What usually causes a symptom that a paste names only in words: the explanation GD327 gives beside its guess, so
that a report on a description says why as well as what to paste next. Knowledge only; the actions stay in the
"meanwhile" fix lines (symptom_words.py). Each sentence says "most often" or "usually": a description proves none."""
from __future__ import annotations

from ..rewards.format_pattern import PITFALLS
from .symptom_words import BANG_OUTPUT, FORMAT_ZERO, SCORE_ZERO, SYMPTOMS

# the symptom said in words -> its usual causes (said strings are those of symptom_words.SYMPTOMS)
_REWARD_ZERO, _REWARD_ONE, _REWARD_LEVEL, _KL_RUNAWAY, _DRIFT, _GRAD_ZERO = (
    next(said for _, _, said in SYMPTOMS if said.startswith(head)) for head in (
        "the reward is (or fell to) 0", "the reward is always 1", "the reward does not improve",
        "the KL to the reference", "the policy's entropy", "the gradient norm stays 0"))

USUAL_SAID = {
    FORMAT_ZERO: f"Most often the pattern is at fault, not the model: {PITFALLS}.",
    # GRPO's advantage is a reward minus its group's mean: equal rewards in a group teach nothing
    _REWARD_ZERO: ("A GRPO step learns from the differences between the rewards of one prompt's completions: when every "
                   "completion scores 0, every advantage is 0 and the policy does not move. Most often the reward "
                   "function never matches what the model writes (a format it does not produce, an answer its parser "
                   "cannot read), reads the wrong dataset column, or sees completions cut at the maximum completion "
                   "length before the answer."),
    BANG_OUTPUT: ("A completion of nothing but \"!\" is one token sampled over and over: in byte-level vocabularies "
                  "(Qwen's, GPT-2's) \"!\" is token id 0, what sampling returns when the logits are NaN. Most often "
                  "the weights or logits went non-finite (a loss or KL that turned NaN a step before, an overflow in "
                  "fp16), or the generating engine holds weights that were not synced from the trainer correctly "
                  "(a weight-sync or dtype mismatch after an update)."),
    _REWARD_ONE: ("When every completion of a prompt gets the same full reward, every advantage is 0 and nothing is "
                  "learned: most often the tasks are too easy for the model, or the reward is met by any answer (a "
                  "format the system prompt already forces, a lenient answer check)."),
    _REWARD_LEVEL: ("A reward that stays level usually means few groups whose completions' rewards differ (prompts "
                    "all solved or all failed: frac_reward_zero_std near 1), updates too small to move the policy "
                    "(learning rate, a large KL weight), or a reward that cannot tell a better answer from a worse one "
                    "(a format term outweighing the task, an answer parser that misses right answers)."),
    _KL_RUNAWAY: ("A KL to the reference that runs away means the policy moved far from it within a few steps: most "
                  "often a learning rate too high for RL or a KL weight (beta) too small to hold it."),
    _DRIFT: ("A collapse or runaway of entropy or completion length is usually driven by the reward (one that pays for "
             "brevity, for length or for a repeated pattern) or by updates too large for RL (learning rate, clipping)."),
    _GRAD_ZERO: ("A gradient norm of exactly 0 means no trainable weight received a gradient: in GRPO most often "
                 "because every advantage is 0 (each prompt's completions got the same reward), otherwise because "
                 "nothing is trainable (a frozen model, LoRA target modules that match no layer)."),
}
USUAL_SAID[SCORE_ZERO] = USUAL_SAID[_REWARD_ZERO]


# a category's usual causes, for words that name it in no narrower way (said where its "meanwhile" line, the actions
# that tell these causes apart, is the fix: symptom_words.MEANWHILE)
USUAL_CATEGORY = {
    "hang-at-start": ("A start that hangs is most often a process group that never forms (a rank that cannot reach the "
                      "master address and port, a wrong network interface for NCCL/gloo, a rank that died before it), a "
                      "download waiting on the network, or a stale lock file (the datasets or torch_extensions cache)."),
    "hang-mid-training": ("A run that stops mid-way is most often one rank waiting in a collective for another that is "
                          "stuck or dead (its own error earlier in its own log), a generation that never ends (no bound "
                          "on the completion length), or a save or evaluation step."),
    "host-oom-killed": ("The host's RAM most often goes to dataset workers (num_proc, dataloader workers), to CPU offload "
                        "of optimizer states or weights, and to every process (each rank, each Ray worker) holding its "
                        "own copy of what it loads."),
    "output-degenerate": ("Garbled or repeating output most often comes from a chat template that is not the model's own "
                          "(base against instruct, a missing end-of-turn token), from the sampling settings "
                          "(temperature, top_p, repetition penalty), or from a policy that drifted (KL rising, too high "
                          "a learning rate)."),
    "slow-training": ("A GRPO step's time most often goes to generation (the model's own generate instead of a vLLM "
                      "engine, or an engine given small batches or a small memory share), to reward functions running "
                      "on the CPU, to gradient checkpointing and ZeRO-3 or CPU offload (each trades speed for memory), "
                      "or to evaluation and saving too often."),
    "reward-zero-or-flat": ("A GRPO step learns from the differences between the rewards of one prompt's completions: "
                            "rewards at 0, or equal within each group, most often come from a reward function that "
                            "never matches what the model writes (a format it does not produce, an answer its parser "
                            "cannot read), one that reads the wrong dataset column, completions cut at the maximum "
                            "completion length before the answer, or tasks all solved or all failed."),
    "gpu-underutilized": ("Idle GPUs in an RL run most often wait on generation: the model's own generate instead of a "
                          "vLLM engine, an engine given a small memory share or small batches, or a few long completions "
                          "that keep one engine busy while the others wait; otherwise on the CPU (reward functions, data "
                          "preprocessing, dataloader workers)."),
    "nccl-timeout": ("An NCCL timeout is what the ranks that waited report: most often another rank failed or stalled "
                     "first (its traceback, an out-of-memory or a kill earlier in its own log), or one step took longer "
                     "than the timeout on one rank (a long generation, a save, an evaluation)."),
    "loss-nan-or-inf": ("A loss that turns NaN or inf most often comes from fp16 overflow, from a learning rate too high, "
                        "or from a batch with nothing to average over (every label masked, an empty completion)."),
}


# the same symptoms in a run that samples no completions (SFT, DPO, pre-training): no policy to drift, no rollouts
USUAL_UNSCORED = {
    "output-degenerate": ("Output that loops or turns to noise after supervised fine-tuning most often comes from a chat "
                          "template or end-of-turn token at inference that is not the one trained with (a base model "
                          "trained without an end-of-sequence token keeps going), from sampling settings (greedy "
                          "decoding without a repetition penalty loops), or from too high a learning rate or too many "
                          "epochs on a small data set."),
}


# a start that hangs in a run whose training processes start a vLLM engine (colocated: ms-swift's colocate mode, trl's
# vllm_mode="colocate", verl's and OpenRLHF's hybrid engines): the real cases behind symptom_words.MEANWHILE_VLLM_START
USUAL_VLLM_START = ("With a vLLM engine in the training processes, a start that hangs most often waits on that engine: a "
                    "vLLM release the trainer does not support, a tensor-parallel group or memory share that does not "
                    "fit beside the training state (ZeRO-3, offload, sleep mode), or an engine that never comes up on "
                    "one rank; otherwise a process group that never forms or a download waiting on the network.")


def usual(said: str) -> str | None:
    """The sentence on what usually causes the symptom these words name, or None."""
    return USUAL_SAID.get(said)
