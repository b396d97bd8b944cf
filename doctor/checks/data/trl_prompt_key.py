"""GD436: trl's own GRPOTrainer._prepare_inputs finds no 'prompt' key in the batch ms-swift hands it."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule, evidence_of
from ...signals import ExceptionInfo, LogLine

_KEY_PROMPT = lazyre.compile(r"""KeyError: ['"]prompt['"]""")
_TRL_GRPO = lazyre.compile(r"trl[\\/]trainer[\\/]grpo_trainer\.py")


class TrlPromptKeyError(Rule):
    """ms-swift hands its batch to trl's own ``_prepare_inputs``, which wants raw rows with a 'prompt' key
    (dev-log 010): trl and the ms-swift checkout do not match, or the rows lack the expected columns."""

    kinds = frozenset({LogLine, ExceptionInfo})
    literals = ("KeyError", "'prompt'", "_prepare_inputs", "grpo_trainer")
    idle_silent = True   # fed nothing: no key line (doctor/lazyrules.py)

    def __init__(self, meta):
        super().__init__(meta)
        self.key_line: LogLine | None = None
        self.frame_line: LogLine | None = None
        self.swift_frames = False
        self._pending_keyerror: LogLine | None = None

    def feed(self, signal: Any) -> None:
        if isinstance(signal, ExceptionInfo):
            exc: ExceptionInfo = signal
            if exc.short_type == "KeyError" and exc.message.strip().strip("'\"") == "prompt":
                last = exc.raised_at
                if (last is not None and last.func == "_prepare_inputs" and _TRL_GRPO.search(last.path)
                        and self.key_line is None):
                    self.key_line = LogLine(exc.raw, exc.raw, exc.where, exc.rank, exc.seq)
                if any("swift" in fr.path for fr in exc.frames):
                    self.swift_frames = True
            return
        line: LogLine = signal
        t = line.text.strip()
        if "_prepare_inputs" in t and _TRL_GRPO.search(t) and self.frame_line is None:
            self.frame_line = line
        if "swift" in t and ("grpo_trainer" in t or "rlhf" in t):
            self.swift_frames = True
        if _KEY_PROMPT.search(t) and self.key_line is None:
            self.key_line = line
        elif "KeyError" in t and ":" not in t.split("KeyError", 1)[1][:2]:
            self._pending_keyerror = line  # debugger view: "Exception has occurred: KeyError" then "'prompt'"
        elif t in ("'prompt'", '"prompt"') and self._pending_keyerror is not None and self.key_line is None:
            self.key_line = self._pending_keyerror

    def finish(self, ctx: RunState) -> list[Finding]:
        if self.key_line is None or self.frame_line is None:
            return []
        ev = [evidence_of(self.key_line), evidence_of(self.frame_line)]
        who = "ms-swift's GRPO trainer" if self.swift_frames else "the GRPO trainer"
        msg = (f"trl's GRPOTrainer._prepare_inputs looked for a 'prompt' key in the batch and found none: {who} "
               f"handed it rows in another format. trl's own path expects raw rows with a 'prompt' column, while "
               f"ms-swift encodes 'messages' itself, so reaching trl's _prepare_inputs from ms-swift usually means the "
               f"installed trl does not match the ms-swift version (or a modified checkout).")
        fix = ["Reinstall ms-swift with the trl it was released with (`pip install -e .` in the checkout, or "
               "`pip install 'ms-swift==<version>'`), then `pip show trl` against the README dependency table "
               "(HEAD: trl >=0.15,<1.0, recommended 0.29.1; ms-swift 3.8: trl <0.21).",
               "Keep the dataset in ms-swift's format: a `messages` list (system/user turns) plus the columns your "
               "reward functions read (e.g. `solution` for accuracy); a custom `prompt` column is not what it wants.",
               "Compare with an unmodified ms-swift checkout if you changed trainer code."]
        return [self.make(message=msg, fix=fix, evidence=ev, seq=self.key_line.seq)]
