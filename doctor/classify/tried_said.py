"""What a paste says was already tried without success ("已经把batch调到1了还是不行", "I tried lowering the learning rate
but the loss is still 0"), and which of a finding's levers that rules out: a fix bullet that names such a lever is
told so, with the sentence quoted, instead of being offered as new. Pure: the kept lines and a finding in, a finding
out (called by outcomes_amend.amend_by_outcomes for the same findings)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .. import lazyre
from ..model import Finding
from ..signals import LogLine
from ..sources.prose_text import loosely_prose

# the sentence says something was done: "already", "tried", "even set", "已经", "试过", "调到"
_DONE = lazyre.compile(r"(?i)\b(?:already|tried|have tried|i've tried|also tried|even (?:set|tried|reduced|lowered|used|"
                       r"with))\b|已经|试过|尝试(?:了|过)|也试了|都试了|调到|调成|改成|改为|设为|设置为|降到|减到|开了|加了")
# ... and that it did not help: "still", "no luck", "didn't help", "还是不行", "仍然", "无效"
_NO_HELP = lazyre.compile(r"(?i)\bstill\b|\bno luck\b|(?:didn't|did not|doesn't|does not|don't|won't) (?:help|work|fix|"
                          r"solve|change)|\bto no avail\b|\bwithout (?:success|luck|effect)\b|\bsame (?:error|issue|"
                          r"problem|result)\b|还是|仍然|依然|无效|没用|没有用|不行|解决不了|无法解决|没效果|没有效果")

# the levers a fix may name, each with how a paste names it and how a fix bullet does
_LEVERS: tuple[tuple[str, object, object], ...] = (
    ("the batch size", lazyre.compile(r"(?i)batch|\bbs\s*=|批"), lazyre.compile(r"(?i)\bbatch\b|batch_size")),
    ("gradient checkpointing", lazyre.compile(r"(?i)gradient[_ ]checkpointing|梯度检查点"),
     lazyre.compile(r"(?i)gradient[_ ]checkpointing")),
    ("the maximum length", lazyre.compile(r"(?i)max_length|cutoff_len|max_seq_length|max_completion_length|"
                                          r"max_new_tokens|长度"),
     lazyre.compile(r"(?i)maximum length|max_length|completion length|cutoff_len|max_seq_length")),
    ("the learning rate", lazyre.compile(r"(?i)learning[_ ]rate|\blr\b|学习率"),
     lazyre.compile(r"(?i)learning[_ ]rate|\blr\b")),
    ("the precision", lazyre.compile(r"(?i)\b(?:bf16|fp16|fp32|float32|bfloat16|float16)\b"),
     lazyre.compile(r"(?i)\b(?:bf16|fp16|fp32|float32|bfloat16|float16)\b")),
    ("DeepSpeed ZeRO / offload", lazyre.compile(r"(?i)\bzero[-_ ]?[23]?\b|offload|deepspeed"),
     lazyre.compile(r"(?i)\bZeRO\b|offload")),
    ("vLLM's memory share", lazyre.compile(r"(?i)gpu_memory_utilization"),
     lazyre.compile(r"(?i)gpu_memory_utilization|memory share")),
)
_MAX_QUOTE = 200
# a clause: "试过 zero3 不行，float32 好像可以" holds one lever tried in vain and one that worked
_CLAUSE_END = lazyre.compile(r"[,，;；。.!?！？]\s*|\s+but\s+|\s+however\s+")


def tried(lines: Iterable[LogLine]) -> list[tuple[str, str]]:
    """(lever, sentence) for each lever a sentence of the paste says was tried without success; the first sentence
    for each lever."""
    out: dict[str, str] = {}
    for ln in lines:
        text = ln.text.strip().lstrip(">").strip()
        if not loosely_prose(text) or not _DONE.search(text) or not _NO_HELP.search(text):
            continue
        clauses = [c for c in _CLAUSE_END.split(text) if c.strip()]
        for i, clause in enumerate(clauses):
            # done in this clause, in vain in it or the next one ("已经把batch调到1了还是不行", "I tried bs=1, still OOM")
            if not _DONE.search(clause) or not (_NO_HELP.search(clause) or
                                                (i + 1 < len(clauses) and _NO_HELP.search(clauses[i + 1]))):
                continue
            quote = clause if i + 1 >= len(clauses) or _NO_HELP.search(clause) else f"{clause}, {clauses[i + 1]}"
            quote = quote.strip()
            quote = quote if len(quote) <= _MAX_QUOTE else quote[:_MAX_QUOTE - 1] + "…"
            for name, said, _ in _LEVERS:
                if name not in out and said.search(clause):  # type: ignore[attr-defined]
                    out[name] = quote
    return list(out.items())


def mark_tried(finding: Finding, lines: Iterable[LogLine]) -> Finding:
    """The finding, each fix bullet that names a lever the paste says was tried without success told so."""
    done = tried(lines)
    if not done:
        return finding
    fixes = []
    for bullet in finding.fix:
        named = [(name, quote) for name, quote in done
                 if any(n == name and bx.search(bullet) for n, _, bx in _LEVERS)]  # type: ignore[attr-defined]
        if named and not bullet.startswith("The paste"):
            names = ", ".join(n for n, _ in named)
            bullet += f" (The paste says {names} was already tried without success: “{named[0][1]}”.)"
        fixes.append(bullet)
    return replace(finding, fix=tuple(fixes))


__all__ = ["mark_tried", "tried"]
