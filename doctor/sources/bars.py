"""Progress bars summarised inside the chunk scanner (issue 19 point 2): of a stretch of tqdm redraws between two
other fed lines, only the few a rule can tell apart are fed.

A console log of a long run is mostly tqdm redraws (``Train:  17%|█▋ | 1/500 [00:04<33:20,  4.16s/it]``); each
was a candidate line (``%|``, ``it/s]`` and ``Train:`` are trigger words) and paid the whole line path. What
the rules read from them is a last or a largest value:

- the hang rules (``checks/hang/_progress.py``): per description the last bar (the phase it marks: for a
  ``Loading weights`` / ``Loading checkpoint shards`` bar model-load or vllm-init, by whether the trainer init was
  marked before, which no bar marks), and for
  ``Train`` the last bar at step 0 (first-step), the last one past it (training), the last one holding the
  largest step (the step counter, its total and its line) and the last one at all (the step's seq);
- GD621 (``checks/numerics/probability_tensor.py``): the last bar with a rate before its trigger line;
- GD310 (``checks/distributed/host_oom.py``): the last ``Train:`` bar past step 0.

So of the *pure* bars of such a stretch (see ``BAR``), keyed by the text before the percentage and the trigger
words on the line, the scanner keeps the last one, the last at step 0, the last past it and the last holding
the key's largest step (at most four lines per key), and feeds them, in file order, with their own line number
and seq, before the next other line. Any subset that holds these lines, fed in order, leaves every reader in
the state the whole stretch leaves it in. A pure bar is one message (no ``\\r`` inside, nothing glued after the
rate), starts with a letter (no rank, worker or logger prefix, not a bare bar: a bare bar's meaning depends on
the lines before it), and holds no trigger word but ``BAR_WORDS`` (no other rule, nor the config, traceback or
metrics readers, can see it). ``Processed prompts`` and ``Adding requests`` bars are not pure: the hang rules
keep every one.

When a rule outside ``READERS`` takes one of ``BAR_WORDS``, nothing is summarised (every bar is fed as before):
a new reader must be checked against the rule above and added there. ``tests/test_bars.py`` compares both paths.

Metric lines take a short cut too (``BarStretch.metric_line``, issue 19 point 3): a printed dict on a line of its
own (``{'loss': '0', ...}``: ASCII, printable, one message, no paste wrapper, no prefix) whose only trigger words
are the metric literals goes straight to ``read_console``: the other readers of ``Session.feed_line`` (config,
traceback tracker, end markers, rules by literal) do nothing with such a line while no rule takes a metric literal
(checked, else no short cut) and no ``vllm`` of any case is in it.

Such rows are gathered into a block (sources/console_rows.py ``GatheredRows``) that goes to ``Session.emit_many`` at
once, before any other line is fed. A row ends the bars' stretch only for a rule that reads Metrics too (the hang rules:
a bar and a row both move the step counter): it gets the bars kept since the last row held among the block's rows, in
file order (``Session.emit_many``'s ``between``). A rule that reads no Metrics never sees the rows, so for it the
stretch runs on to the next line fed whole, and it gets the bars kept over the whole stretch then. The stretch hands
bars and rows on to the block; the block calls nothing here.
"""
from __future__ import annotations

import re
from typing import Any

from .. import lazyre
from ..gate import WordGate, engine
from ..signals import LogLine, Metrics, Where
from . import console_rows
from . import metrics as msrc
from .console_rows import GatheredRows
from .logtext import EVIDENCE_MAX
from .matchers import EXTRA_TRIGGERS
from .quiet import AnyWord
from .train_bars import TRAIN_PRES, TrainBar, bar_line

BAR_WORDS = frozenset({"%|", "it/s]", "s/it]", "Train:", "Loading weights", "Loading checkpoint shards"})
# the rules that read pure bars, each only as above (class names, so that sources/ imports no rule)
READERS = frozenset({"doctor.checks.hang.post_mortem.HangCheck",
                     "doctor.checks.numerics.probability_tensor.ProbabilityTensorNaN",
                     "doctor.checks.distributed.host_oom.HostOomKilled"})
# a pure bar's shape (its source also reads every bar line of a run at once: sources/step_runs.py). Its rate part is
# greedy: neither "[0-9:<?, ]" nor the rate before its "]" holds a "]", so any match ends at the first "]" after the
# "[" as a lazy one would (the same matches and groups), and the rate is found with one step back instead of a try at
# each character of the times (a dense log's bar lines: ~1.4 us less each; tests/test_bars.py compares both)
BAR_SOURCE = (rb"(?P<pre>[A-Za-z][A-Za-z0-9 _()=]{0,60}:? *)\d{1,3}%\|(?:\xe2\x96[\x88-\x8f]|[ #])*\| *(?P<k>\d+)/(?P<n>\d+) "
              rb"\[[0-9:<?, ]*(?:\d+(?:\.\d+)?(?:it/s|s/it| examples/s)|\?it/s|\? examples/s)\]\r?")
BAR = lazyre.compile(BAR_SOURCE)
# the same language over the text of lines that decode as UTF-8 (a run's bar lines are read so: sources/step_runs.py):
# "\xe2\x96[\x88-\x8f]" is the UTF-8 of U+2588..U+258F, one character class here instead of an alternation tried at
# each block character (~2.7 k instructions less a bar); every other piece is ASCII, and [0-9] stands for \d, which
# a text pattern would take for any Unicode digit (tests/test_bars.py compares both)
BAR_TEXT = (r"(?P<pre>[A-Za-z][A-Za-z0-9 _()=]{0,60}:? *)[0-9]{1,3}%\|[\u2588-\u258f #]*\| *(?P<k>[0-9]+)/(?P<n>[0-9]+) "
            r"\[[0-9:<?, ]*(?:[0-9]+(?:\.[0-9]+)?(?:it/s|s/it| examples/s)|\?it/s|\? examples/s)\]\r?")
_KEPT_ALL = (b"Processed prompts", b"Adding requests")   # the hang rules keep every such bar
MAX_KEYS = 256   # distinct keys pending at once; past it the stretch is fed (flush) and starts again


def _reads_bars(rule: Any) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" in READERS for c in type(rule).__mro__)


TRAIN = 2   # pre_kind: a pure bar's, whose description is Train (sources/train_bars.py)


def pre_kind(pre: bytes) -> int:
    """What a pure bar's text before the percentage says: 0 no pure bar (the hang rules keep every such bar), TRAIN,
    else 1."""
    if pre.startswith(_KEPT_ALL):
        return 0
    return TRAIN if pre.rstrip(b" ") in TRAIN_PRES else 1


def summarisable(session: Any) -> bool:
    """Whether every rule that takes a bar word reads bars only as the module says."""
    for r in session.rules:
        if BAR_WORDS.intersection(getattr(r, "literals", ()) or ()) and not _reads_bars(r):
            return False
    return True


def _keep(slot: list[Any], entry: tuple[Any, ...], k: int) -> None:
    """Keep a bar at step ``k`` in its key's slot (see BarStretch._keys)."""
    slot[0] = entry
    slot[1 if k == 0 else 2] = entry
    if k >= slot[4]:
        slot[3], slot[4] = entry, k


class BarStretch:
    """The pure bars seen since the last other line fed: ``take`` keeps one (or says it is not pure),
    ``flush`` hands back the ones to feed, in file order."""

    def __init__(self, session: Any):
        self.session = session
        words = session.gate_words
        # reads rows (True), not (False), any (None) -> the words of a line -> the rules it goes to
        self._routes: dict[bool | None, dict[frozenset[str], tuple[Any, ...]]] = {True: {}, False: {}, None: {}}
        # console metric rows not emitted yet, and the bars held among them for a rule reading rows too
        self.gathered = GatheredRows(session)
        self._pre: dict[bytes, int] = {}      # the text before the percentage -> pre_kind
        # (the text before the percentage, the rate's last 6 characters) -> (pre_kind, the key of such a bar): bar_key
        self._keys_of: dict[tuple[bytes, bytes], tuple[int, tuple[bytes, frozenset[str]]]] = {}
        self._trains: dict[frozenset[str], bool] = {}   # the words of a Train bar -> its rules that read rows take it so
        # key -> [last, last at step 0, last past step 0, last with the key's largest step, that step]: the bars since
        # the last line fed whole (for the rules that read no rows: the rows among them are not theirs) and since
        # the last row gathered (for a rule that reads rows too, which takes bars and rows in file order); until a
        # row comes after the last line fed whole, both are the same and only the first is kept
        self._keys: dict[tuple[bytes, frozenset[str]], list[Any]] = {}
        self._since_row: dict[tuple[bytes, frozenset[str]], list[Any]] = {}
        self._row_seen = False   # a row gathered since the last line fed whole: _since_row is kept apart
        metric_words = frozenset(msrc.LITERALS)
        self.metric_words = metric_words if not any(
            LogLine in r.kinds and metric_words.intersection(r.literals or ()) for r in session.rules) else frozenset()
        self._metric_rx = re.compile("|".join(map(re.escape, sorted(metric_words))))   # any of them, in one search
        # with Hyperscan, "which trigger words" is asked as "any other word?" (one scan stopping at the first) plus
        # a substring test per bar or metric word: the same answer as the gate's for these lines, ~3 us less each
        self._not_metric: AnyWord | None = None
        self._gate: WordGate[str] | None = None
        if engine() != "hyperscan":
            self._gate = WordGate({w: (w,) for w in set(words) | set(EXTRA_TRIGGERS)})
        else:
            vocab = set(words) | set(EXTRA_TRIGGERS)
            self._bar_words = tuple(sorted(BAR_WORDS & vocab))
            self._not_bar = AnyWord(vocab - BAR_WORDS)
            self._not_metric = AnyWord(vocab - self.metric_words) if self.metric_words else None

    @property
    def pending(self) -> bool:
        return bool(self._keys)

    def take(self, lineno: int, seq: int, data: bytes) -> bool:
        """Keep the physical line ``data`` (line ``lineno``, message ``seq``) when it is a pure bar."""
        if b"%|" not in data:
            return False
        m = BAR.fullmatch(data)
        if m is None:
            return False
        pre = m.group("pre")
        gate = self._gate
        if gate is None:  # Hyperscan; BAR matched: the line is ASCII and block characters
            rate = data[-6:] if data[-1:] != b"\r" else data[-7:-1]
            got = self._keys_of.get((pre, rate))
            if got is None:
                got = self.bar_key(pre, rate, data)
            ok, key = got
            if not ok or self._not_bar.found(data):
                return False
            words = key[1]
        else:
            kind = self._pre.get(pre)
            if kind is None:
                kind = pre_kind(pre)
                if len(self._pre) < 4096:
                    self._pre[pre] = kind
            if not kind:
                return False
            ok = kind
            words = frozenset(w for hit in gate.hits(data.decode("utf-8")) for w in hit)
            if not words <= BAR_WORDS:
                return False
            key = (pre, words)
        slot = self._keys.get(key)
        if slot is None:
            if len(self._keys) >= MAX_KEYS:
                return False
            slot = self._keys[key] = [None, None, None, None, -1]
        k = int(m.group("k"))
        # (line, seq, text, words, step, for a Train bar its total or -1 (read when asked), else None): train_bars.py
        entry = (lineno, seq, data, words, k, -1 if ok == TRAIN else None)
        _keep(slot, entry, k)
        if self._row_seen:
            near = self._since_row.get(key)
            if near is None:
                near = self._since_row[key] = [None, None, None, None, -1]
            _keep(near, entry, k)
        return True

    def bar_key(self, pre: bytes, rate: bytes, data: bytes) -> tuple[int, tuple[bytes, frozenset[str]]]:
        """(pre_kind of its text before the percentage, its key: that text and its words) of the pure bar ``data`` whose
        last 6 characters before any ``\\r`` are ``rate`` (Hyperscan only), kept for the next bar with that text and
        rate: a line BAR matches whole holds a bar word only in that text ("Train:", "Loading weights", ...), its
        "%|" and its rate ("it/s]", "s/it]"), so every such bar has the same words."""
        ok = self._pre.get(pre)
        if ok is None:
            ok = pre_kind(pre)
            if len(self._pre) < 4096:
                self._pre[pre] = ok
        text = data.decode("utf-8")
        got = ok, (pre, frozenset([w for w in self._bar_words if w in text]))
        if len(self._keys_of) < 4096:
            self._keys_of[(pre, rate)] = got
        return got

    def metric_line(self, path: str, lineno: int, seq: int, data: bytes) -> bool:
        """Emit the metrics of a lone printed dict (see the module) and say so; False: not such a line."""
        if not self.metric_words or data[:1] != b"{" or not data.isascii() or b"/s]" in data or b"/it]" in data:
            return False
        if not self.session.state.console_metrics:  # metrics come from logging.jsonl: such a line is fed as any
            return False
        text = data.decode("ascii").rstrip()
        if not text.endswith("}") or not text.isprintable() or "llm" in text.lower():
            return False
        gate = self._gate
        if gate is None:  # Hyperscan
            if self._not_metric is None or self._not_metric.found(data) or not self._metric_rx.search(text):
                return False
        else:
            words = frozenset(w for hit in gate.hits(text) for w in hit)
            if not words or not words <= self.metric_words:
                return False
        # a metric word is in the line, so msrc.has_literal(text) holds (the metric words are its literals)
        if ":" in text:
            values, finite = msrc.read_console(text)
            if values is not None:
                row = Metrics(values, Where(path, lineno), seq, "console", finite)
                self._bars_before_row(path)
                if not console_rows.GATHER:
                    self.session.emit(row)
                    return True
                gathered = self.gathered
                gathered.rows.append(row)
                if len(gathered.rows) >= console_rows.ROWS_MAX:
                    gathered.emit()
        return True

    def flush(self, path: str) -> int:
        """Feed the bars kept, in file order, straight to the rules their words route them to (what
        ``Session.feed_line`` does with such a line: its other readers do nothing with it, and the scanner
        rebuilds the tail): to a rule that reads rows too those since the last row, to the others those since the
        last line fed whole (the rows among them are not theirs); returns how many lines."""
        if not self._row_seen:
            return self._feed_kept(path, self._keys, None, None)
        self._row_seen = False
        lines: dict[int, LogLine] = {}
        self._feed_kept(path, self._since_row, True, lines)
        self._feed_kept(path, self._keys, False, lines)
        return len(lines)

    def _bars_before_row(self, path: str) -> None:
        """A row is gathered: a rule that reads rows takes the bars kept since the last row (or line fed whole)."""
        if self._row_seen:
            self._feed_kept(path, self._since_row, True, None)
        else:
            self._feed_kept(path, self._keys, True, None, clear=False)   # the others still wait for the next line
            self._row_seen = True

    def _feed_kept(self, path: str, keys: dict[Any, list[Any]], reads_rows: bool | None,
                   lines: dict[int, LogLine] | None, clear: bool = True) -> int:
        """Feed the bars kept in ``keys`` to the rules that read rows (``reads_rows``), to the others (False) or to all
        (None), and clear it; ``lines``: the lines built so far in this flush, by line number (None: not kept).
        Returns how many."""
        out = {e[0]: e for slot in keys.values() for e in slot[:4] if e is not None}
        if clear:
            keys.clear()
        gathered = self.gathered
        for n in sorted(out):
            _, seq, data, words, k, total = out[n]
            rules = self._rules(words, reads_rows)
            if total is not None and lines is None and reads_rows and gathered.rows and self._train_bars(words, rules):
                held = TrainBar(k, total, seq, n, data, path)   # held among the rows: its line if kept
                for r in rules:
                    gathered.hold(held, r)
                continue
            line = lines.get(n) if lines is not None else None
            if line is None:
                text = data.decode("utf-8")   # a pure bar: ASCII and block characters, one message (bar_line)
                if text.endswith("\r"):
                    text = text[:-1]
                raw = text if len(text) <= EVIDENCE_MAX else text[:EVIDENCE_MAX] + "…"
                line = LogLine(text, raw, Where(path, n), None, seq, "")
                if lines is not None:
                    lines[n] = line
            for r in rules:
                if gathered.rows and (reads_rows or reads_rows is None and Metrics in r.kinds):   # after the rows before it
                    gathered.hold(line, r)
                elif total is not None and getattr(r, "takes_train_bars", False):   # by its step (train_bars.py)
                    bar = TrainBar(k, total, seq, n, data, path)
                    bar._line = line
                    r.feed_train_bar(bar)
                else:
                    r.feed(line)
        return len(out)

    def feed_bar(self, path: str, entry: tuple[Any, ...]) -> None:
        """_feed_kept of one bar to the rules that read rows (sources/step_runs.py: the one bar between two rows)."""
        n, seq, data, words, k, total = entry
        rules = self._rules(words, True)
        gathered = self.gathered
        if not gathered.rows:
            line = bar_line(data, path, n, seq)
            for r in rules:
                r.feed(line)
        elif total is not None and self._train_bars(words, rules):
            held = TrainBar(k, total, seq, n, data, path)
            for r in rules:
                gathered.hold(held, r)
        else:
            line = bar_line(data, path, n, seq)
            for r in rules:
                gathered.hold(line, r)

    def _train_bars(self, words: frozenset[str], rules: tuple[Any, ...]) -> bool:
        """Whether every rule of ``rules`` (those reading rows a Train bar holding ``words`` goes to) takes TrainBar."""
        ok = self._trains.get(words)
        if ok is None:
            ok = self._trains[words] = all(getattr(r, "takes_train_bars", False) for r in rules)
        return ok

    def _rules(self, words: frozenset[str], reads_rows: bool | None) -> tuple[Any, ...]:
        """The rules a line holding exactly ``words`` goes to that read Metrics too (``reads_rows``), or not (False), or
        all (None), in catalog order, each once."""
        table = self._routes[reads_rows]
        hit = table.get(words)
        if hit is None:
            hit = table[words] = tuple(
                r for r in self.session.rules if LogLine in r.kinds and not r.wants_all_lines and r.literals
                and words.intersection(r.literals) and (reads_rows is None or (Metrics in r.kinds) is reads_rows))
        return hit
