"""A symptom said in words no phrase pattern of symptom_words.py knows: a thing the run produces and what is wrong with
it, named in one sentence in either order ("the model's answers become shorter and shorter", "ETA shows 150 hours for 3
epochs", "All completions in a group get identical rewards"). Read only where no phrase pattern names a symptom: the
phrases say more exactly what is wrong; a subject and a predicate only say which kind of failure it is. Pure."""
from __future__ import annotations

import re

from ... import lazyre

# (category, what the words say, the subject, the predicate): tried in this order, the first pair in one sentence wins
# (the GPUs' usage first, its subject the most exact: "GPU usage goes to 0 during reward computation"; the rewards
# before the outputs: "identical rewards for every completion" names the rewards)
_PAIRS: tuple[tuple[str, str, re.Pattern, re.Pattern], ...] = (
    ("gpu-underutilized", "the GPUs are mostly idle",
     lazyre.compile(r"(?i)\bgpus?[- _]?(?:usage|util\w*|load)\b|\bgpus? (?:is|are|sits?|stays?) idle\b|"
                    r"\butili[sz]ation of (?:the )?(?:\w+ )?gpus?\b|显卡利用率|(?i:gpu)利用率"),
     lazyre.compile(r"(?i)(?<![\d.])0 ?%|\b(?:goes|drops?|dropped|falls?|fell) to 0\b|\b(?:idle|low|fluctuat\w*)\b|"
                    r"\bonly (?:around |about |~)?[1-5]?\d ?%|低|空闲")),
    ("reward-zero-or-flat", "the rewards do not move",
     lazyre.compile(r"(?i)(?<![a-z])rewards?(?![a-z])|奖励"),
     lazyre.compile(r"(?i)\b(?:identical|the same|constant|flat|plateau\w*)\b|"
                    r"\b(?:does(?:n't| not)|do(?:n't| not)|never) (?:move|change|increase|improve|go up|grow)s?\b|"
                    r"\bnot (?:moving|changing|increasing|improving|growing)\b|不变|不动|不涨|没有变化")),
    ("output-degenerate", "the completions degenerate",
     lazyre.compile(r"(?i)\b(?:outputs?|answers?|responses?|completions?|generations?(?! config)|generated (?:text|tokens?|answers?)|"
                    r"replies)\b|\b(?:the )?(?:model|policy) (?:only )?(?:produces|generates|outputs|answers|says|replies)\b|"
                    r"输出|回答|回复|生成的?(?:内容|结果|文本)"),
     lazyre.compile(r"(?i)\b(?:shorter and shorter|longer and longer|empty|whitespace|newlines|(?:only|just)(?: \w+)? (?:the )?eos(?: token)?|mix of "
                    r"languages|languages mixed|repeat\w*|repetiti\w*|duplicat\w*|nonsense|garbage|gibberish|garbled|"
                    r"weird|strange|abnormal|broken|(?:in|into) an? (?:infinite |endless )?loop|never (?:end|stop)s?|meaningless|incoherent|"
                    r"(?:keep |keeps )?getting longer|cut off|truncated|incomplete|"
                    r"(?:<\w+>|special) (?:tags?|tokens?))\b|乱码|重复|异常|为空|奇怪")),
    ("slow-training", "training is slow",
     lazyre.compile(r"(?i)\b(?:training|train|steps?|epochs?|iterations?|rollouts?|generation|eta)\b|训练|每步"),
     lazyre.compile(r"(?i)\b(?:slow\w*|bottleneck|so much time|too much time|too long|so long|forever|dominates|"
                    r"most of the (?:step )?time)\b|"
                    r"\b\d+(?:\.\d+)?\s*(?:hours|hrs|days)\b(?! ago)|(?<![前这那过])(?:几|十几|几十|\d+)\s*(?:个)?(?:小时|天)(?!前)")),
    ("slow-training", "the throughput is low",
     lazyre.compile(r"(?i)\b(?:throughput|speed|tokens?/s|tok/s|it/s|samples?/s)(?![\w/])|速度|吞吐"),
     lazyre.compile(r"(?i)\b(?:low|drops?|dropped|decreas\w*|degrad\w*|only)\b|低|下降")),
    ("hang", "the run stops making progress",
     lazyre.compile(r"(?i)\b(?:process(?:es)?|training|job|run|it|program|script|everything|trainer)\b|训练|程序|进程"),
     lazyre.compile(r"(?i)\b(?:sits? there|sitting there|nothing happens|does nothing|no progress|waits? forever|"
                    r"never (?:finishes|continues|moves on))\b|一动不动|没有进展")),
)

# a sentence about the data or about messages, not generated text: "The dataset has empty strings in the answer column",
# "The outputs repeat the run's first error on every rank"
_NOT_GENERATED = lazyre.compile(r"(?i)\b(?:dataset|column|field|errors?|exceptions?|traceback|warnings?|logs?)\b|数据集|报错")

# a sentence's end: the pair must be in one sentence
_SENTENCE = lazyre.compile(r"[.!?;](?:\s|$)|[。！？；]")
# a sentence longer than this many characters says many things: a pair in it is chance
_MAX_SENTENCE = 200


def pair_symptom(text: str) -> tuple[str, str] | None:
    """(category, what the words say) of the first pair named in one sentence of ``text``; "hang" for a stop (the
    caller places it at start-up or mid-run); None when no sentence holds one."""
    for sentence in _SENTENCE.split(text):
        if not sentence.strip() or len(sentence) > _MAX_SENTENCE:
            continue
        for category, said, subject, predicate in _PAIRS:
            if category == "output-degenerate" and _NOT_GENERATED.search(sentence):
                continue
            if subject.search(sentence) and predicate.search(sentence):
                return category, said
    return None
