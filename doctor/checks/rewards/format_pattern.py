"""A format reward that scores 0: what a hand-written format pattern usually gets wrong, said once for the rules
that meet one (GD612 from logged rows, GD327 from a paste's words). Pure."""
from __future__ import annotations

import re

# a reward function named for the format it checks: open-r1's format_reward, unsloth's notebooks'
# soft_format_reward_func / strict_format_reward_func / match_format_exactly / xmlcount_reward_func, R1-V's format_reward
_FORMAT_NAME = re.compile(r"(?i)format|xml|tags?(?![a-z])")


def names_format(reward_name: str) -> bool:
    return _FORMAT_NAME.search(reward_name) is not None


# The pitfalls, each seen in real runs where the completions did hold the tags:
# - `.` without re.DOTALL stops at a newline: open-r1's first format_reward (huggingface/open-r1#237,
#   fixtures/devlogs64/6727; the fix landed as open-r1 PR 238: fixtures/devlogs32/3523);
# - re.match / `^` anchored at the decoded text's first character, which held role or prompt text
#   (StarsfieldAI/R1-V#124, fixtures/devlogs67/7014);
# - `$` or a required end token / newline the completions end without (lsdefine/simple_GRPO#19,
#   fixtures/devlogs64/6728).
# - an opening `<think>` required of completions whose chat template already put it into the prompt (DeepSeek-R1
#   distills, Qwen3-style thinking templates: huggingface/open-r1#560, where the maintainer names the template;
#   huggingface/trl#6966, trl's own think_format_reward). A trainer scores only the generated tokens.
PITFALLS = ("a format reward written as a regular expression scores 0 on completions that do hold the tags when `.` "
            "does not cross newlines (no re.DOTALL: a thought over several lines never matches), when re.match or `^` "
            "anchors at the completion's first character (a leading newline, or role or prompt text decoded with the "
            "completion), when `$`, a required end-of-turn token or a final newline meets completions that end "
            "otherwise, or when the pattern requires an opening `<think>` that the chat template already put at the "
            "end of the prompt (DeepSeek-R1 distills, thinking templates), so that no generated completion holds it")

CHECK = ("Call the format reward by hand on three logged completions: if it scores them 0 while they show the tags, "
         "fix the pattern (re.search with re.DOTALL over the stripped completion); if the tags are missing, check the "
         "end of one rendered prompt first (a template that opens the thought for the model), else the model was never "
         "asked for them: state the format in the system prompt, or SFT on examples in that format first.")


def meanwhile() -> str:
    """The fix line for a format reward said to stay at 0 (its explanation, PITFALLS, goes in the message)."""
    return f"Meanwhile: {CHECK[0].lower()}{CHECK[1:]}"
