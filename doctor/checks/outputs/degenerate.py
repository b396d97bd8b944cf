"""GD640: empty, identical or looping completions in completions.jsonl (``--log_completions true``).

completions.jsonl holds one column table per log call:
``{"step": [...], "prompt": [...], "completion": [...], "<RewardName>": [...], "advantages": [...], ...}``
(swift-notes §3). Consecutive rows with the same prompt form one GRPO group. The same table can be
written twice for one step; such repeats are skipped.
"""
from __future__ import annotations

import re
from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import Completions, Where
from .._runargs import arg_float, more_generations
from .._series import fmt

try:   # hashlib's own blake2b, without importing hashlib (it loads OpenSSL's library: ~11 M instructions at start)
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

MAX_TABLES = 20_000
_WORD = lazyre.compile(r"\w+|[^\w\s]", re.UNICODE)


def looping(text: str) -> tuple[bool, str]:
    """Does the completion end in a loop (a unit of text repeated many times)?"""
    t = text.strip()
    if len(t) < 40:
        return False, ""
    tail = t[-600:]
    # a unit of 1..60 characters repeated at least 4 times (and covering 50%+ of the tail or 120+ chars)
    m = re.search(r"(.{1,60}?)\1{3,}$", tail, re.DOTALL)
    if m and len(m.group(0)) >= min(120, len(tail) // 2) and m.group(1).strip():
        return True, m.group(1)
    toks = _WORD.findall(t[-4000:])
    if len(toks) >= 60:
        grams = [tuple(toks[i:i + 4]) for i in range(len(toks) - 3)]
        distinct = len(set(grams)) / len(grams)
        if distinct < 0.25:
            return True, " ".join(max(set(grams), key=grams.count))
    return False, ""


class CompletionsDegenerate(Rule):
    """GD640: empty, identical-within-group or looping completions in completions.jsonl."""

    kinds = frozenset({Completions})
    idle_silent = True   # fed nothing: no tables, no completions (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.seen: set[str] = set()
        self.tables = 0
        self.completions = 0
        self.groups = 0
        self.empty: list[tuple[Where, str, int]] = []   # (where, step, count)
        self.n_empty = 0
        self.identical_groups = 0
        self.identical_ex: list[tuple[Where, str, str, int, int]] = []
        self.n_loop = 0
        self.loop_ex: list[tuple[Where, str, str]] = []
        self.first_seq = 0

    def feed(self, signal: Any) -> None:
        if not isinstance(signal, Completions) or self.tables >= MAX_TABLES:
            return
        row, where = signal.row, signal.where
        comps = row.get("completion")
        if not isinstance(comps, list):
            return
        prompts = row.get("prompt")
        if not isinstance(prompts, list) or len(prompts) != len(comps):
            prompts = [None] * len(comps)
        comps = [c if isinstance(c, str) else _text_of(c) for c in comps]
        key = blake2b(repr((row.get("step"), comps[:8], [str(p)[:200] for p in prompts[:2]])).encode(),
                      digest_size=12).hexdigest()
        if key in self.seen:
            return
        self.seen.add(key)
        self.tables += 1
        step = row.get("step")
        step = str(step[0]) if isinstance(step, list) and step else str(step) if step is not None else "?"
        self.completions += len(comps)
        # groups: consecutive equal prompts
        groups: list[list[str]] = []
        last = object()
        for p, c in zip(prompts, comps):
            pk = p if p is not None else last
            if groups and pk == last:
                groups[-1].append(c)
            else:
                groups.append([c])
            last = pk if p is not None else last
        n_empty = sum(1 for c in comps if not c.strip())
        if n_empty:
            self.n_empty += n_empty
            if len(self.empty) < 3:
                self.empty.append((where, step, n_empty))
        for g in groups:
            if len(g) < 2:
                continue
            self.groups += 1
            nonempty = [c for c in g if c.strip()]
            if len(nonempty) >= 2 and len(set(nonempty)) == 1 and len(nonempty) == len(g):
                self.identical_groups += 1
                if len(self.identical_ex) < 3:
                    self.identical_ex.append((where, step, nonempty[0], len(g), len(g)))
        for c in comps:
            lp, unit = looping(c)
            if lp:
                self.n_loop += 1
                if len(self.loop_ex) < 3:
                    self.loop_ex.append((where, step, unit))

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.tables or not self.completions:
            return []
        run = ctx.run
        parts: list[str] = []
        fix: list[str] = []
        ev: list[Evidence] = []
        sev = None
        empty_frac = self.n_empty / self.completions
        loop_frac = self.n_loop / self.completions
        ident_frac = self.identical_groups / self.groups if self.groups else 0.0
        if self.n_empty and (empty_frac >= 0.25 or self.n_empty >= 8):
            parts.append(f"{self.n_empty} of {self.completions} logged completions are empty "
                         f"({fmt(100 * empty_frac, 3)}%)")
            sev = Severity.error if empty_frac >= 0.5 else Severity.warning
            for w, st, k in self.empty:
                ev.append(Evidence(w.path, w.line, f"step {st}: {k} empty completion(s)"))
            fix.append("Empty completions mean the model emits EOS at once: check the chat template (--template) and "
                       "that the prompt ends with the assistant turn; a model collapsed this way needs a restart from an "
                       "earlier checkpoint with a lower --learning_rate.")
        if self.n_loop and (loop_frac >= 0.25 or self.n_loop >= 8):
            parts.append(f"{self.n_loop} of {self.completions} completions end in a repetition loop "
                         f"({fmt(100 * loop_frac, 3)}%)")
            s2 = Severity.error if loop_frac >= 0.5 else Severity.warning
            sev = max(sev, s2) if sev is not None else s2
            for w, st, unit in self.loop_ex:
                ev.append(Evidence(w.path, w.line, f"step {st}: repeats {unit[:80]!r}"))
            fix.append("Penalise loops: add the built-in repetition reward (--reward_funcs ... repetition) and/or "
                       "--repetition_penalty 1.05; loops usually also run into max_completion_length.")
        if self.identical_groups and self.groups >= 2 and ident_frac >= 0.5:
            parts.append(f"in {self.identical_groups} of {self.groups} groups every completion is identical "
                         f"({fmt(100 * ident_frac, 3)}%)")
            sev = sev if sev is not None else Severity.warning
            for w, st, text, k, _ in self.identical_ex:
                ev.append(Evidence(w.path, w.line, f"step {st}: {k} x {text[:120]!r}"))
            temp = arg_float(run, "temperature")
            g = run.int_arg("num_generations")
            fix.append("Identical completions in a group all get the same reward, so the group has no advantage: "
                       + (f"--temperature {fmt(temp)} is low, use 0.9-1.0" if temp is not None and temp < 0.7
                          else "raise --temperature towards 1.0")
                       + (f" and/or {more_generations(run, g)}" if g else "") + ".")
        if not parts:
            return []
        seen_txt: set[str] = set()
        ev = [e for e in ev if not (e.text in seen_txt or seen_txt.add(e.text))]
        msg = "The logged completions are degenerate: " + "; ".join(parts) + "."
        return [self.make(message=msg, fix=fix, evidence=ev[:6], count=self.tables, severity=sev,
                          seq=self.first_seq)]


def _text_of(c: Any) -> str:
    """A completion logged as a message list: [{'role': 'assistant', 'content': '...'}]."""
    if isinstance(c, list):
        return " ".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in c)
    if isinstance(c, dict):
        return str(c.get("content", ""))
    return "" if c is None else str(c)
