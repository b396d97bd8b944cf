"""The ``trainer`` claim: a sentence that holds only for GRPO (its generation groups, ``num_generations``,
``GRPOConfig``, "in GRPO ...") is a claim that the run trains with GRPO. When the run shows another trainer (DPO, SFT,
PPO, a model server: doctor/swift/trainer_kind.py), the GRPO part goes: a parenthesis or a clause after ";" that holds
it is cut out, a trl config class is renamed to the run's (``DPOConfig(beta=...)``), and a sentence that is GRPO
through and through is dropped. An unknown trainer contradicts nothing (grpo-doctor's subject is GRPO)."""
from __future__ import annotations

import re
from collections.abc import Iterator

from . import lazyre
from .claim_facts import Claim, RunFacts, Verdict, conditional
from .swift.llamafactory_args import is_transformers
from .swift.trainer_kind import GROUP_KINDS, UNSCORED_KINDS

# what only a grouped-sampling trainer has: GRPO by name, its group size, its groups of completions
_GRPO = lazyre.compile(r"\bGRPO\b|\bnum_generations\b|\bgeneration groups?\b|\bgroups? of (?:\d+ )?completions\b|"
                   r"\bcompletions per prompt\b|\bflat groups?\b|\bgroup(?:-relative)? advantages?\b")
# a trainer that scores nothing (SFT, pre-training) or scores pairs (DPO and its relatives), or a server: no reward
# function runs there (trainer_kind.UNSCORED_KINDS)
_REWARD_FUNCS = lazyre.compile(r"\breward functions?\b|\breward_funcs\b")
# vLLM as the rollout engine beside the trainer (colocate mode, its sleep level, its share of the GPU): only an online
# trainer generates during training; an offline one (SFT, pre-training, DPO and its relatives) runs no vLLM, and the
# advice is noise there even when put as a condition
_ROLLOUT = lazyre.compile(r"\bvLLM runs colocated\b|\bvllm_mode\b|\buse_vllm\b|\bvllm_gpu_memory_utilization\b|"
                      r"--sleep_level\b|\bvllm_enable_sleep_mode\b|\brollout engine\b")
_OFFLINE = UNSCORED_KINDS - {"serve", "infer"}
# the trainer's side of a failure (a trainer beside the engine, its steps, its weight sync): a run that only serves or
# infers has none
_TRAINER_SIDE = lazyre.compile(r"\b(?:the|a|its) trainer\b|\btrainer's\b|\bweight sync\b|\btraining steps?\b|"
                               r"\btraining state\b|\bfirst rollout\b|\bfirst (?:training )?step\b|\brollout server\b")
_SERVING = frozenset({"serve", "infer"})
# "X, not the trainer", "X, together with the trainer versions ... (...)" and "both when X and when a trainer Y (...)":
# the trainer's part is a contrast, an addition or an alternative, and the rest stands without it
_NOT_TRAINER = lazyre.compile(r",? not (?:the|a) trainer(?:'s \w+)?\b|"
                              r", together with (?:the|a) trainer[^;.(]*(?:\([^)]*\))?")
_OR_TRAINER = lazyre.compile(r"\bboth (when [^.;]*?) and when a trainer [^.;(]*(?:\([^)]*\))?")
_CONFIG = lazyre.compile(r"\bGRPOConfig(?:\(([^()]*)\)|\.\w+)")
# the GRPO-only fields of trl's GRPOConfig (trl/trainer/grpo_config.py): no other trainer's config has them
_GRPO_FIELDS = lazyre.compile(r"\b(?:num_generations|reward_funcs|reward_weights|use_vllm|vllm_mode|"
                          r"generation_batch_size|steps_per_generation|num_iterations|scale_rewards)\b")
_FIELD = lazyre.compile(r"(?:[(,]\s*)(\w+)=")
_PAREN = lazyre.compile(r"\s*\([^()]*\)")
# the last item of a sentence joined by "and" / "or", outside parentheses
_LAST_CONJUNCT = lazyre.compile(r",?\s+(?:and|or)\s+[^,;()]*[.!]?$")
# a clause that refers back to the one before it
_LEANS_BACK = lazyre.compile(r"(?i)(?:the|it|its|this|that|these|those|they|them|so|then|which|there)\b")


def find(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _CONFIG.finditer(masked):
        yield Claim("trainer", "GRPOConfig", m.group(0), m.start(), m.end())
    for subject, pattern in (("grpo", _GRPO), ("reward", _REWARD_FUNCS)):
        for m in pattern.finditer(masked):
            if masked[max(0, m.start() - 1):m.start()] != "`" and not conditional(masked, m.start()):
                yield Claim("trainer", subject, m.group(0), m.start(), m.end())
    m = _ROLLOUT.search(masked)
    if m is not None:
        yield Claim("trainer", "rollout", m.group(0), m.start(), m.end())
    m = _TRAINER_SIDE.search(masked)
    if m is not None and not conditional(masked, m.start()):
        yield Claim("trainer", "server", m.group(0), m.start(), m.end())


def _clauses(text: str) -> list[str]:
    """The clauses of a sentence split at "; " outside parentheses (a ";" inside one belongs to it)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0 and text[i + 1:i + 2] == " ":
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [c.strip() for c in out]


def _without(sentence: str, words: re.Pattern) -> str | None:
    """The sentence with the parentheses (or the items of a parenthesised list) and the clauses after ";" that hold
    ``words`` cut out; None when nothing else is left, or when the first clause goes and the next leans on it."""
    def paren(m: re.Match) -> str:
        inner = m.group(0).strip()[1:-1]
        items = [i for i in inner.split(", ") if not words.search(i)]
        return "" if not items else m.group(0)[:m.group(0).index("(") + 1] + ", ".join(items) + ")"

    def conjunct(clause: str) -> str:
        # "... and the first step finishes", "... or by this process's training state": the last item goes alone
        tail = _LAST_CONJUNCT.search(clause)
        if tail is None or not words.search(tail.group(0)) or words.search(clause[:tail.start()]):
            return clause
        end = tail.group(0)[-1]
        return clause[:tail.start()] + (end if end in ".!" else "")

    out = _PAREN.sub(lambda m: paren(m) if words.search(m.group(0)) else m.group(0), sentence)
    parts = [conjunct(c) for c in _clauses(out)]
    kept = [c for c in parts if not words.search(c)]
    if kept and words.search(parts[0]):
        if _LEANS_BACK.match(kept[0]):
            return None   # "...; the slowest one is what to change": it leans on the clause that went
        kept[0] = kept[0][:1].upper() + kept[0][1:]
    out = "; ".join(kept).strip()
    if not out or words.search(out) or len(out.split()) < 3:
        return None
    return out if out.endswith((".", "!", "?", ":")) else out.rstrip(",;") + "."


def _training_arguments_only(call: str) -> bool:
    """``GRPOConfig(a=1, b=2)`` or ``GRPOConfig.a``: every field named is one of transformers' TrainingArguments, which every trl
    config (DPOConfig, SFTConfig...) and transformers' own Trainer take."""
    names = [call.split(".", 1)[1]] if call.startswith("GRPOConfig.") else _FIELD.findall(call[call.index("("):])
    return bool(names) and all(is_transformers(n) for n in names)


def _cut_enclosing(sentence: str, start: int, end: int) -> str | None:
    """The sentence without the parenthesis around [start, end) ("Train in bfloat16 (GRPOConfig(...) with bf16=True)
    on ..."): the lever is the sentence's, its spelling the config's; None when no parenthesis holds it."""
    depth, open_at = 0, -1
    for i in range(start - 1, -1, -1):
        depth += (sentence[i] == ")") - (sentence[i] == "(")
        if depth < 0:
            open_at = i
            break
    if open_at < 0:
        return None
    depth = 0
    for j in range(end, len(sentence)):
        depth += (sentence[j] == "(") - (sentence[j] == ")")
        if depth < 0:
            cut = (sentence[:open_at].rstrip() + sentence[j + 1:]).strip()
            return cut if len(cut.split()) >= 3 else None
    return None


def judge(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    if c.subject == "server":
        if facts.trainer not in _SERVING:
            return None
        bare = _OR_TRAINER.sub(lambda m: m.group(1).rstrip(), _NOT_TRAINER.sub("", sentence))
        return Verdict(f"the run is a {facts.trainer_label} process: no trainer runs in it", _without(bare, _TRAINER_SIDE))
    if c.subject == "rollout":
        if facts.trainer not in _OFFLINE:
            return None
        return Verdict(f"the run trains with {facts.trainer_label}: no vLLM generates during its training",
                       _without(sentence, _ROLLOUT))
    if facts.trainer is None or facts.trainer in GROUP_KINDS:
        return None
    why = f"the run trains with {facts.trainer_label}, not GRPO"
    if c.subject == "GRPOConfig":
        cls = facts.trainer_config
        if cls is None and _training_arguments_only(c.value):
            cls = "TrainingArguments"   # every trl config and transformers' Trainer take these fields
        if cls is None or _GRPO_FIELDS.search(c.value):
            return Verdict(why, _cut_enclosing(sentence, c.start, c.end))
        # the sentence's own text after the class name: the claim's value is read from the masked sentence, whose
        # quoted strings are blanked
        return Verdict(why, sentence[:c.start] + cls + sentence[c.start + len("GRPOConfig"):])
    if c.subject == "reward":
        if facts.trainer not in UNSCORED_KINDS:
            return None
        return Verdict(f"the run trains with {facts.trainer_label}: no reward function runs", _without(sentence, _REWARD_FUNCS))
    return Verdict(why, _without(sentence, _GRPO))


__all__ = ["find", "judge"]
