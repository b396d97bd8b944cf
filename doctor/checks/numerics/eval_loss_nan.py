"""GD636: the evaluation loss is NaN or inf while the training rows say otherwise. transformers' Trainer logs
eval_loss as the mean of the eval batches' losses; a causal LM's loss is torch's cross-entropy averaged over the label
tokens that are not -100, so an eval batch with none (every answer cut off by the maximum length, a completion-only
collator whose response template never matches) averages over nothing: NaN. The other reading is the forward pass
itself overflowing in fp16 on the eval samples."""
from __future__ import annotations

from itertools import compress
from operator import attrgetter, methodcaller
from typing import Any

from ...engine.columns import Block
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import Metrics
from .._series import num

_VALUES = attrgetter("values")
_HAS_EVAL = methodcaller("__contains__", "eval_loss")


class EvalLossNan(Rule):
    kinds = frozenset({Metrics})

    def __init__(self, meta: Any) -> None:
        super().__init__(meta)
        self.evals = 0
        self.bad = 0
        self.first: Metrics | None = None
        self.train_losses: list[float] = []   # the training loss of the last rows (finite or not)

    def feed(self, signal: Any) -> None:
        self.feed_many([signal])

    def feed_many(self, signals: list[Any]) -> None:
        # the eval rows are few: the rows that hold eval_loss are picked in C, then read one by one; a block whose rows
        # all hold one key set is asked its first row only (a console run's rows build no dict for it: LazyMetrics)
        block = Block.of(signals) if len(signals) > 1 else None
        if block is not None and block.one_key_set:
            rows = signals if "eval_loss" in block.row(0) else []
        else:
            rows = list(compress(signals, map(_HAS_EVAL, map(_VALUES, signals))))
        for m in rows:
            self.evals += 1
            x = num(m.values["eval_loss"])
            if x is not None and x - x != 0:
                self.bad += 1
                self.first = self.first or m
        last = num(signals[-1].values.get("loss"))
        if last is not None:
            self.train_losses = (self.train_losses + [last])[-8:]

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.bad or self.first is None:
            return []
        if any(f.category == "loss-nan-or-inf" and f.rule_id != self.meta.id for f in ctx.findings):
            return []  # the training loss itself went NaN: GD620 says so, and this follows from it
        train = [x for x in self.train_losses if x == x and abs(x) != float("inf")]
        said = (f"; the training loss stayed finite ({', '.join(f'{x:g}' for x in train[-3:])} in its last rows)"
                if train else "")
        msg = (f"eval_loss was NaN or inf in {self.bad} of {self.evals} evaluations, the first logged on line "
               f"{self.first.where.line}{said}. The eval loss is the mean over the eval "
               f"batches' label tokens that are not -100: an eval batch with none (every answer cut off by the "
               f"maximum length, or masked by a template or completion-only collator that never finds the response) "
               f"averages over nothing and gives NaN; the other reading is the forward pass overflowing in fp16 on the "
               f"eval samples.")
        shown = ", ".join(f"'{k}': {v}" for k, v in list(self.first.values.items())[:4])
        ev = Evidence(self.first.where.path, self.first.where.line, "{" + shown + "}")
        return [self.make(message=msg, evidence=[ev], seq=self.first.seq)]
