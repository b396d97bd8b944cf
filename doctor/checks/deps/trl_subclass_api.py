"""GD455: a custom GRPO trainer written for the trl 0.14 interface running on a newer trl."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import ExceptionInfo
from ._frames import is_lib, short_path


class TrlSubclassApi(Rule):
    """A custom GRPO trainer written for the trl 0.14 interface (raw rows in compute_loss) running on a newer trl
    that hands compute_loss a dict of tensors: ``TypeError: string indices must be integers`` (dev-log 009)."""

    kinds = frozenset({ExceptionInfo})
    idle_silent = True   # fed nothing: no exception (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.exc: ExceptionInfo | None = None

    def feed(self, signal: Any) -> None:
        exc: ExceptionInfo = signal
        if self.exc is not None or exc.short_type != "TypeError":
            return
        if not ("string indices must be integers" in exc.message or
                "list indices must be integers or slices, not str" in exc.message):
            return
        if any("reward" in (fr.path + fr.func).lower() or "orm" == fr.func.lower() or "plugin" in fr.path.lower()
               for fr in exc.frames):
            return  # a reward function indexing its inputs: a reward function error, not this
        user = [fr for fr in exc.frames if not is_lib(fr.path)]
        prompt_code = any('"prompt"' in fr.code or "'prompt'" in fr.code for fr in user)
        user_hook = any(fr.func in ("compute_loss", "_prepare_inputs", "_generate_and_score_completions")
                        and "grpo" in fr.path.lower() for fr in user)
        if (prompt_code and any("grpo" in fr.path.lower() or fr.func == "compute_loss" for fr in user)) or user_hook:
            self.exc = exc

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.exc is None:
            return []
        exc = self.exc
        user = [fr for fr in exc.frames if not is_lib(fr.path)]
        named = [fr for fr in user if not fr.func.startswith("<")]
        at = named[-1] if named else (user[-1] if user else exc.frames[-1])
        trl = ctx.run.versions.get("trl")
        msg = (f"{short_path(at.path)}:{at.lineno} in {at.func} indexes the trainer inputs as raw dataset rows "
               f"(x[\"prompt\"]), but the installed trl{(' ' + trl) if trl else ''} passes compute_loss a dict of "
               f"tensors (prompt_ids, completion_ids, advantages, ...): the custom GRPO trainer was written for the "
               f"trl 0.14 interface, and trl 0.15 moved generation into _prepare_inputs.")
        fix = ["Install the trl the project pins (its requirements file; for trainers written against trl 0.14: "
               "pip install trl==0.14.0).",
               "Or port the subclass to the installed trl: override _generate_and_score_completions/_prepare_inputs "
               "instead of reading prompts in compute_loss."]
        return [self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                          seq=exc.seq, ranks=(exc.rank,) if exc.rank is not None else ())]
