"""GD645: completions pasted as text that are garbage: one line mixing three or more writing systems (a token soup
of Latin, CJK, Cyrillic, Hangul, Arabic...), or a word or escaped newline repeated five times and more in a row.

What it reads: the last lines of each text input (the tail), as people paste the completions they saw in a
completions table, a wandb panel or their own print. A log line (a logger prefix, a traceback frame, a metrics
dict) is never judged. Real cases: verl-project/verl#7904 (mixed CJK/Cyrillic/Arabic token soup after a weight
sync), vllm-project/vllm#2255 (runs of zeros and newlines from a TP engine), modelscope/ms-swift#9656 (mixed
scripts, `is is is is`, runs of `\\n`, after the first weight sync of a Megatron trainer to a rollout server).
"""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...swift.trainer_kind import GROUP_KINDS
from ...textcache import for_short_texts

_REPEAT = lazyre.compile(r"(?<!\S)(\S{1,12})(?:\s+\1){4,}(?!\S)")
# one character or a short piece repeated with no space between (`!!!!!!!!`, `。。。。`, `的的的的`, `abcabcabc`): not the
# characters logs draw lines, bars and Python's error carets with (-, =, _, *, #, ~, ^, ., +, |, /, \\, box drawing, blocks)
_GLUED_RUN = lazyre.compile(r"([^\s\-=_*#~^.+|/\\\u2500-\u259f0-9])\1{19,}|([^\s\-=_*#~^.+|/\\\u2500-\u259f0-9]{2,6})\2{7,}")
_NUMERIC = lazyre.compile(r"^[-+]?[\d.,:%e]*$|^(?:nan|inf|None|True|False)[,\]]?$", re.I)
_LOGLIKE = lazyre.compile(r"^\s*(?:\[|\{|File \"|Traceback|\d{4}-\d\d-\d\d|[A-Z]\d{4} |\w+:\d+:\d+ \[|(?:INFO|WARNING|ERROR|"
                      r"DEBUG)\b)|\|.*\||\bit/s\]|s/it\]|"
                      # `nvidia-smi topo -m`'s matrix: links between GPUs (NV18, SYS, PIX...) in tab-separated columns
                      r"\t(?:NV\d+|SYS|PIX|PXB|PHB|NODE)\t")
# writing systems by code point range (the ones real token soups mix)
_SCRIPTS = (("latin", 0x41, 0x24F), ("greek", 0x370, 0x3FF), ("cyrillic", 0x400, 0x4FF), ("arabic", 0x600, 0x6FF),
            ("devanagari", 0x900, 0x97F), ("thai", 0xE00, 0xE7F), ("hangul", 0xAC00, 0xD7AF),
            ("cjk", 0x4E00, 0x9FFF), ("kana", 0x3040, 0x30FF))
# a punctuation token repeated this many times in a row ("{: {: {: ..." in devlogs71/7417); the characters logs draw
# rules, bars and boxes with (rich's tracebacks: "│ │ │") never
_PUNCT_REPEATS = 8
_DRAWING = frozenset("-=_*#~^.+|/\\<>:;,'\"`()[]")
# a word that mixes two alphabets inside itself ("framідnexProgram", "напskieWrapperabi": vLLM's token soup from
# mis-loaded weights, devlogs71/7434); a sentence that quotes a foreign word keeps each word in one alphabet. Chinese,
# Japanese and Korean text glues Latin words to its own characters with no space ("使用vllm推理"): not counted
_MIXED_WORDS = 1
_GLUED_SCRIPTS = frozenset({"cjk", "kana", "japanese", "hangul"})
MIN_LINES = 2
BARE_PASTE_LINES = 5   # an input of at most this many non-blank lines, none a log line, is a pasted completion: one
                       # garbled line there is enough (the state's tail holds such an input whole)


def scripts(text: str) -> set[str]:
    out: set[str] = set()
    for ch in text:
        if ch.isalpha():
            o = ord(ch)
            for name, lo, hi in _SCRIPTS:
                if lo <= o <= hi:
                    out.add(name)
                    break
    if {"cjk", "kana"} <= out:
        # Japanese is written with kanji and kana together: one writing system, not two
        out -= {"cjk", "kana"}
        out.add("japanese")
    return out


@for_short_texts
def garbled(text: str) -> str:
    """What makes a line look like a degenerate completion ('' when nothing does). Cached for short lines: watch reads
    the same last lines at every live evaluation."""
    if _LOGLIKE.search(text):
        return ""
    for m in _REPEAT.finditer(text):
        tok = m.group(1)
        count = len(m.group(0).split())
        if tok == "\\n" or (not _NUMERIC.match(tok) and any(c.isalpha() for c in tok)):
            return f"`{tok}` repeated {count} times in a row"
        # a piece of punctuation a completion loops on ("{: {: {: {:"), not one logs draw rules and bars with
        if count >= _PUNCT_REPEATS and not _NUMERIC.match(tok) and not all(c in _DRAWING or "\u2500" <= c <= "\u259f"
                                                                           for c in tok):
            return f"`{tok}` repeated {count} times in a row"
    g = _glued_run(text)
    if g is not None:
        piece = g.group(1) or g.group(2)
        return f"`{piece}` repeated {len(g.group(0)) // len(piece)} times with no space between"
    clean = _DAMAGED.sub(" ", text) if "\ufffd" in text else text
    s = scripts(clean)
    if len(s) >= 3:
        return f"{len(s)} writing systems mixed in one line ({', '.join(sorted(s))})"
    mixed = [w for w in clean.split() if len(scripts(w) - _GLUED_SCRIPTS) >= 2]
    if len(mixed) >= _MIXED_WORDS:
        return f"{len(mixed)} words mixing writing systems inside one word (`{mixed[0][:24]}`)"
    return ""



# a word with a replacement character in it: bytes a decoder could not read (a Windows console's GBK message shown as
# UTF-8 leaves single Arabic, Coptic or Latin letters between the U+FFFD), not a writing system of the text
_DAMAGED = lazyre.compile(r"\S*\ufffd\S*")
_HEX_ID = lazyre.compile(r"[0-9a-fA-F]{16,}")


def _glued_run(text: str):
    """The first run of one piece repeated with no space between, outside a hexadecimal id (`ffffffffffffffffa8df...`:
    Ray's task, actor and node ids, hashes), or None."""
    return next((m for m in _GLUED_RUN.finditer(text) if not _in_hex_id(text, m.start())), None)


def _in_hex_id(text: str, at: int) -> bool:
    """Whether position ``at`` lies in a hexadecimal identifier of 16+ digits (an id or a hash, not a completion)."""
    start = at
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = at
    while end < len(text) and not text[end].isspace():
        end += 1
    return any(m.start() <= at - start < m.end() for m in _HEX_ID.finditer(text[start:end]))


def _bare_paste(tail) -> bool:
    """The whole input is a few lines of text and none is a log line: a completion pasted alone, where one garbled
    line is the evidence there is (in a log, one such line among thousands may be anything)."""
    return len(tail) <= BARE_PASTE_LINES and not any(_LOGLIKE.search(l.text) for l in tail)


def _strong(text: str) -> bool:
    """Enough for one line alone: a token repeated, or four writing systems (three fit a sentence that translates a
    word: 'The word 水 (water) is вода in Russian.'). A run of exclamation or question marks glued to a word is a
    person's emphasis ('CUDA OUT OF MEMORY!!!!!!!! HELP!!!'); a completion of them stands alone or quoted
    ('the responses become "!!!!!!!!!!"', Qwen's '!' token)."""
    if garbled(text).startswith("`"):
        g = _glued_run(text)
        emphasis = (g is not None and set(g.group(0)) <= set("!?\uff01\uff1f") and g.start() > 0
                    and text[g.start() - 1].isalnum())
        return not emphasis
    return len(scripts(text)) >= 4


# what shows an RL run whose completions are rollouts: the frameworks that only do RL, its trainer, its words
RL_FRAMEWORKS = frozenset({"verl", "openrlhf", "easyr1"})
RL_KINDS = GROUP_KINDS | {"ppo", "online_dpo"}
_RL_WORDS = lazyre.compile(r"(?i)(?<![a-z])(?:rollouts?|rewards?|vllm|grpo|ppo|rloo|dapo|gspo|rlhf|advantages?)(?![a-z])")


class GarbledText(Rule):
    kinds = frozenset()

    def finish(self, ctx: RunState) -> list[Finding]:
        if ctx.preflight:
            return []
        for tail in ctx.tails.values():
            bad = [(l, why) for l in tail if (why := garbled(l.text))]
            if len(bad) >= MIN_LINES or (len(bad) == 1 and _bare_paste(tail) and _strong(bad[0][0].text)):
                return [self._finding(ctx, bad)]
        return []

    def _finding(self, ctx: RunState, bad: list) -> Finding:
        reasons = "; ".join(f"line {l.where.line}: {why}" for l, why in bad[:4])
        fw = ctx.framework()[0]
        if len(bad) == 1:
            head = (f"The one pasted line reads as a degenerate completion ({reasons}); one completion cannot tell "
                    f"whether every completion is like it: a few more of the same step would.")
        else:
            head = f"{len(bad)} pasted line(s) read as degenerate completions ({reasons})."
        from ..hang.prose import unscored_shown  # noqa: PLC0415 - the words' readers, only once a line is garbage
        from ..hang.symptom_words import MEANWHILE_UNSCORED  # noqa: PLC0415
        from ..hang.usual_causes import USUAL_UNSCORED  # noqa: PLC0415
        ev, seq = [Evidence(l.where.path, l.where.line, l.raw) for l, _ in bad[:3]], bad[0][0].seq
        lines = [line for tail in ctx.tails.values() for line in tail]
        texts = [line.text for line in lines] + list(ctx.run.command_texts)
        rl = fw in RL_FRAMEWORKS or ctx.trainer_kind().kind in RL_KINDS or any(_RL_WORDS.search(t) for t in texts)
        if all(why.startswith(("`!", "`！")) and "no space between" in why for _, why in bad):
            # nothing but "!": token id 0 sampled from NaN logits, whichever training ran (hang/usual_causes.py)
            from ..hang.symptom_words import BANG_OUTPUT  # noqa: PLC0415
            from ..hang.usual_causes import usual  # noqa: PLC0415
            fix = ["Run the model in bfloat16 (vLLM --dtype bfloat16; transformers torch_dtype=torch.bfloat16) or "
                   "float32: a model trained in bfloat16 can overflow float16's range; if the weights themselves hold NaN "
                   "(a checkpoint saved after a NaN step), load one saved before it."]
            if rl:
                fix.append("In an RL run, log the rollouts of the first step (before any weight sync) and of the step "
                           "after it: \"!\" only after the sync means the engine's synced weights are wrong (a dtype "
                           "or weight-sync mismatch), with the trainer's own weights finite.")
            return self.make(message=f"{head} {usual(BANG_OUTPUT)}", fix=fix,
                             evidence=ev, seq=seq,
                             verify="the same prompts give words, not a run of \"!\", in the dtype the model was trained in")
        if not rl:
            # no rollout engine shown (supervised training, plain inference, or nothing said): the template and the
            # sampling come first; the weight sync only if the outputs are an RL run's rollouts
            plain = MEANWHILE_UNSCORED["output-degenerate"].removeprefix("Meanwhile, in a run without rollouts: ")
            fix = [plain[:1].upper() + plain[1:]]
            msg = f"{head} {USUAL_UNSCORED['output-degenerate']}"
            if not unscored_shown(ctx, lines):
                msg = msg.replace(" after supervised fine-tuning", "", 1)   # nothing says which training ran
                msg += (" If these are an RL run's rollouts, a rollout engine whose weights are not the trainer's (a "
                        "broken weight sync, a wrong dtype or tensor-parallel split) produces the same.")
                fix.append("If these are an RL run's rollouts: log the rollouts of the very first step (before any "
                           "weight sync) and of the step after it: garbage only after the sync means the synced "
                           "weights are wrong.")
            return self.make(message=msg, fix=fix,
                             evidence=ev, seq=seq, verify="the same prompt, rendered with the chat template the model was "
                                                       "trained with, gives an answer that ends at its end-of-turn token")
        msg = (f"{head} Token soup across writing "
               f"systems and one token repeated up to the length limit are what a policy produces when the rollout "
               f"engine's weights are not the model's (a broken weight sync, a wrong dtype or tensor-parallel "
               f"split, a LoRA merged wrongly), or when the prompt reaches the model without its chat template. If "
               f"plain inference with the same checkpoint is fine, suspect the weights the rollout engine holds "
               f"after the trainer's first sync.")
        fix = ["Log the rollouts of the very first step (before any weight sync) and of the step after it: garbage "
               "only after the sync means the synced weights are wrong."]
        if fw == "ms-swift":
            fix.append("ms-swift: try --vllm_mode colocate instead of server (or the reverse), and upgrade ms-swift and "
                       "vLLM together to a pair whose weight sync supports this model (MoE and VL models in "
                       "particular); with Megatron-SWIFT check the exported weights by loading them in vLLM alone.")
        elif fw == "trl":
            fix.append("trl: compare `trl vllm-serve` output with the trainer's model before training; upgrade trl and "
                       "vLLM together; with PEFT make sure the adapter is merged before the weights are pushed.")
        elif fw == "verl":
            fix.append("verl: try actor_rollout_ref.rollout.free_cache_engine=False (sleep/wake can corrupt weights) "
                       "and a vLLM version verl supports.")
        else:
            fix.append("Try the rollout engine in the trainer's process (colocate) or without sleep mode, and a vLLM "
                       "version the trainer release supports.")
        fix.append("Check the prompt the engine receives: it must be rendered with the model's chat template.")
        return self.make(message=msg, fix=fix, evidence=ev, seq=seq)
