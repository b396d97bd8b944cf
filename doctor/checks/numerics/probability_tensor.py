"""GD621: torch.multinomial on NaN/inf probabilities (CUDA device assert or RuntimeError)."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import LogLine
from .._runargs import arg_float
from .._series import fmt
from ._nan_fixes import nan_fixes

_PROGRESS = lazyre.compile(r"(?P<step>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)<")


class ProbabilityTensorNaN(Rule):
    """GD621: torch.multinomial on NaN/inf probabilities (CUDA device assert or RuntimeError)."""

    kinds = frozenset({LogLine})
    literals = ("probability tensor contains", "it/s]", "s/it]")
    idle_silent = True   # fed nothing: no hits (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self._progress: tuple[str, str, str] | None = None
        # the bar lines since the progress was last read, oldest first: only the newest one that holds a progress
        # matters, so they are read newest first when asked (or when UNREAD_MAX wait), not each as it comes (every
        # tqdm redraw of a log reaches this rule)
        self._unread: list[str] = []
        self.hits: list[tuple[LogLine, tuple[str, str, str] | None]] = []

    UNREAD_MAX = 64

    @property
    def progress(self) -> tuple[str, str, str] | None:
        """(step, total, elapsed) of the last bar line fed that shows them."""
        if self._unread:
            for text in reversed(self._unread):
                ms = list(_PROGRESS.finditer(text))
                if ms:
                    m = ms[-1]
                    self._progress = (m.group("step"), m.group("total"), m.group("elapsed"))
                    break
            self._unread.clear()
        return self._progress

    def feed(self, signal: Any) -> None:
        line: LogLine = signal
        text = line.text
        if "probability tensor contains" in text:
            if len(self.hits) < 1000:
                self.hits.append((line, self.progress))
            return
        if "/it]" in text or "it/s]" in text:
            self._unread.append(text)
            if len(self._unread) >= self.UNREAD_MAX:
                self.progress  # noqa: B018 - reads them (bounds the list)

    def finish(self, ctx: RunState) -> list[Finding]:
        if not self.hits:
            return []
        run = ctx.run
        line, prog = self.hits[0]
        msg = ("Sampling failed because the model's next-token probabilities contained NaN or inf "
               "('probability tensor contains either inf, nan or element < 0'): the policy's logits were already "
               "non-finite, i.e. the weights diverged (the NaN KL/loss that usually shows first).")
        if prog:
            msg += f" It happened after {prog[0]} of {prog[1]} steps, {prog[2]} into the run."
        fix = []
        if run.args.get("use_vllm") in (False, "false", "False") or run.args.get("use_vllm") is None:
            fix.append("This assert comes from torch.multinomial in transformers' generate (completions sampled "
                       "without vLLM, --use_vllm false): the cause is upstream, in training.")
        temp = arg_float(run, "temperature")
        if temp is not None and temp < 0.3:
            fix.append(f"--temperature {fmt(temp)} divides the logits by a small number and overflows in half "
                       f"precision: use 0.7-1.0.")
        fix.extend(nan_fixes(run, kl_first=False, last_ok=None, lr_seen=None))
        save = run.int_arg("save_steps")
        fix.append("Resume from the last checkpoint whose logged loss/kl/grad_norm were still finite"
                   + (f" (checkpoints every {save} steps)" if save else "")
                   + " with --resume_from_checkpoint, after changing the settings above.")
        fix.append("Check the logged kl/loss/grad_norm before the crash (logging.jsonl): the first NaN or the first "
                   "grad_norm spike shows when the run went wrong; rerun with CUDA_LAUNCH_BLOCKING=1 for an exact "
                   "stack.")
        ranks = tuple(sorted({l.rank for l, _ in self.hits if l.rank is not None}))
        return [self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                          count=len(self.hits), ranks=ranks, seq=line.seq)]
