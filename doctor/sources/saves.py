"""Checkpoint save lines among console metric rows: such a line does not end the block of rows gathered before it.

ms-swift prints ``[INFO:swift] Saving model checkpoint to <dir>/checkpoint-N`` every ``save_steps`` steps, most often
glued to the tqdm redraw before it (``Train:  33%|███▎ | 5/500 [00:06<00:13,  3.31s/it][INFO:swift] Saving ...``). A
line fed whole ends the block of console rows gathered by the chunk scanner (sources/console_rows.py), so that every reader of
the line has read the rows printed before it. With a save every few steps a long run's blocks held ~20 rows, and most
were read row by row (below console_rows.ROWS_MIN) instead of over columns.

What the readers of ``Session.feed_line`` do with a line of exactly that shape (``SAVE``: an optional ``Train:`` bar, the
save message, a path of ``PATH_CHARS``), holding no other trigger word nor ``EXTRA_WORDS`` (``SaveLines``), outside a sticky state:

- the tail (``RunState.keep``): rebuilt from the file's end by the scanner; no rank prefix, so no ``max_rank``;
- the state (``RunState.read``): the configuration acts on its own literals (gate words: none here), ``swift/`` and
  ``__version__`` (danger words here), a launch, a dump, a YAML or an env line (the shape has no space, ``(`` or ``=``
  in the path and no line starting lowercase), so nothing; the traceback tracker completes an exception only through
  exception words (gate words: none here) and is not expecting a code line (not sticky); the checkpoint path joins
  ``saves``, which nothing reads before ``finish``; no end marker, no metric row (no quoted key);
- the rules: by their words only ``SAVE_READERS`` (checked, else this module is off) and the bar readers of
  sources/bars.py. Of them only the hang rules read rows: they take the line held with the rows, in file order
  (``Session.emit_many``'s ``between``, as the bars among the rows); the others (GD701 and the bar rules that read no
  row) take it at once, after the bars kept before it, as before.

So every reader's state after the block is what it was when the rows were emitted before the line.

Inside a run of step lines (sources/step_runs.py) such a line does not end the run either, when it is one or two messages
of its own (no ``\r``: ``in_run``): its bar is read with the run's bars, a pure bar by ``BAR`` as the line reader
splits it off, kept like them for the rules that read no rows (GD701 and the hang rules are the only readers of its
message: the bar rules that read no rows see no more of the line than its bar, so their stretch goes on past it), and
its message is ``feed_in_run``'s: built as the line reader builds it, its path to the state's ``saves``, to the rules
that read rows held after the bars kept before it, to GD701 at once. A line fed whole per save cost a flush of the
kept bars, the line reader's ``segments``, the state's reading of two messages and a new run (~1.2 M instructions).
``tests/test_saves.py`` compares both paths on logs and hostile rows; ``GRPO_DOCTOR_BARS=all`` turns it off with the bar
short cut.
"""
from __future__ import annotations

from typing import Any

from .. import lazyre
from ..engine.state import SAVE_RE
from ..gate import engine
from ..signals import LogLine, Metrics, Where
from .bars import BAR_WORDS
from .logtext import EVIDENCE_MAX
from .matchers import _CTRL_CLASS, EXTRA_TRIGGERS
from .quiet import AnyWord

SAVE_WORDS = frozenset({"[INFO:swift]", "Saving model checkpoint to"})
# the rules that read such a line, checked as the module says (class names, so that sources/ imports no rule)
SAVE_READERS = frozenset({"doctor.checks.hang.post_mortem.HangCheck",
                          "doctor.checks.checkpoint.forced_lora.ForcedLora"})
PATH_CHARS = rb"[A-Za-z0-9_./<>+-]"
_BAR = rb"Train: +\d{1,3}%\|(?:\xe2\x96[\x88-\x8f]|[ #])*\| *\d+/\d+ \[[0-9:<?, ]*?(?:\d+(?:\.\d+)?(?:it/s|s/it)|\?it/s)\]"
_MESSAGE = rb"\[INFO:swift\] Saving model checkpoint to " + PATH_CHARS + rb"+"
SAVE = lazyre.compile(rb"(?:" + _BAR + rb")?" + _MESSAGE + rb"\r?")
# a save line a run of step lines reads (sources/step_runs.py): no \r, its bar and its message apart
_IN_RUN = lazyre.compile(rb"(" + _BAR + rb")?(" + _MESSAGE + rb")")
# beyond the session's other trigger words: what the configuration reads without a gate word (see the module)
EXTRA_WORDS = frozenset({"swift/", "__version__"})
EXTRA_EXPRS = (rb"[vV][lL][lL][mM]", _CTRL_CLASS)
ON = True   # False: such a line is fed whole and ends the block (the equivalence tests compare both)
IN_RUNS = True   # False: a save line ends a run of step lines and is fed as above (the equivalence tests compare both)


def _reads(rule: Any) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" in SAVE_READERS for c in type(rule).__mro__)


class SaveLines:
    """``among_rows(data)``: the physical line ``data`` (a scan candidate, not in a sticky state) is a save line whose
    readers do not read the rows before it (see the module)."""

    def __init__(self, words: frozenset[str]):
        danger = (set(words) | set(EXTRA_TRIGGERS) | EXTRA_WORDS) - BAR_WORDS - SAVE_WORDS
        self._danger = AnyWord(danger, EXTRA_EXPRS)

    @classmethod
    def of(cls, session: Any) -> SaveLines | None:
        """The filter of this session, or None: no Hyperscan, a rule reads every line, or a rule outside
        SAVE_READERS takes one of SAVE_WORDS."""
        if not ON or engine() != "hyperscan" or session.sees_every_line:
            return None
        for r in session.rules:
            if LogLine in r.kinds and SAVE_WORDS.intersection(r.literals or ()) and not _reads(r):
                return None
        return cls(session.gate_words)

    def among_rows(self, data: bytes) -> bool:
        return b"Saving model" in data and SAVE.fullmatch(data) is not None and not self._danger.found(data)

    def in_run(self, data: bytes) -> tuple[bytes | None, str] | None:
        """(its bar or None, its message) of a save line ``among_rows`` takes that is one or two messages of their own
        (no ``\\r``), or None. What ``Session.feed_line_among`` then does with it is ``feed_in_run``'s."""
        m = _IN_RUN.fullmatch(data) if b"Saving model" in data else None
        if m is None or self._danger.found(data):
            return None
        return m.group(1), m.group(2).decode("ascii")

    @staticmethod
    def feed_in_run(session: Any, hold: Any, text: str, path: str, lineno: int, seq: int, rules: Any = None) -> Any:
        """Session.feed_line_among of the save message ``text`` (``in_run``) of line ``lineno``, message ``seq``, built
        without the line reader: it is one message of ``PATH_CHARS`` and the two words, which ``segments`` keeps as it is
        (tests/test_saves.py compares them). The state's reading of it is the one thing it does with such a line (see the
        module): the path joins ``saves``; the tail is the scanner's to rebuild. ``rules``: those the message goes to, as
        this returns them (the same for every such message of a run: it holds exactly SAVE_WORDS)."""
        raw = text if len(text) <= EVIDENCE_MAX else text[:EVIDENCE_MAX] + "…"
        line = LogLine(text, raw, Where(path, lineno), None, seq, "")
        session.state.saves.extend(m.group(1) for m in SAVE_RE.finditer(text))
        if rules is None:
            rules = tuple(session._hit_rules(session._gate.hits(text)))
        for r in rules:
            if Metrics in r.kinds:
                hold(line, r)
            else:
                r.feed(line)
        return rules


__all__ = ["SAVE", "SAVE_READERS", "SAVE_WORDS", "SaveLines"]
