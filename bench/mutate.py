"""Metamorphic variants of a log: the ways people damage a log when they paste it.

Each mutation is a pure function ``(text, rng) -> str | None``: the damaged text, or None when the mutation does
not apply to this log (nothing to strip, no exception line, nothing that would change). The same text and the same
``random.Random`` state give the same variant. Used by ``bench/accuracy.py --mutate`` and tests/test_mutate.py.

Lines are split on ``\\n`` only (a ``\\r`` inside a line is a tqdm redraw, not a line end) and keep their end.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable

Mutation = Callable[[str, random.Random], "str | None"]

# "[rank0]: ", "[rank 3]:" at the start of a line, possibly repeated (interleaved ranks)
RANK_PREFIX = re.compile(r"^(?:\[rank\s*\d+\]:[ ]?)+")
TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
# a frame line, also one whose start was cut (`.../trainer.py", line 9, in f`)
FRAME = re.compile(r'\.pyx?"?, line \d+, in ')
# the line that ends a traceback: "ValueError: msg", "torch.OutOfMemoryError: msg", a bare "AssertionError"
EXCEPTION = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)(?::\s.*|:?\s*)$")
LOSS_DICT = re.compile(r"""['"]loss['"]\s*:""")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?%?$")

PROSE = (
    "I ran this on 8 GPUs and got:",
    "Here is the full log:",
    "Same error after upgrading, any idea?",
    "It worked yesterday with the same script.",
    "日志贴在下面了，请帮忙看看",
    "报错信息如下：",
    "请问这是什么原因？",
    "换成单卡也是一样的错误",
)


def lines_of(text: str) -> list[str]:
    """The lines of ``text``, each with its ``\\n`` (the last one may have none)."""
    return _LINE.findall(text)


def _body(line: str) -> tuple[str, str]:
    """(content, line end) of one line from lines_of."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def _bare(line: str) -> str:
    """The line without its end and its rank prefix."""
    return RANK_PREFIX.sub("", _body(line)[0], count=1)


def exception_lines(lines: list[str]) -> list[int]:
    """Indexes of the lines that end a traceback: an exception line after a Traceback header or a frame line."""
    out, seen_stack = [], False
    for i, line in enumerate(lines):
        bare = _bare(line)
        if TRACEBACK.search(bare) or FRAME.search(bare):
            seen_stack = True
        elif seen_stack and EXCEPTION.match(bare):
            out.append(i)
    return out


def is_metric_row(line: str) -> bool:
    """A row of training metrics: a ``'loss':`` / ``{"loss"`` dict, or a table row (``| 12 | 0.31 |``) whose cells are
    mostly numbers (a header row or a ``|---|`` separator is not one)."""
    bare = _bare(line).strip()
    if LOSS_DICT.search(bare):
        return True
    if not bare.startswith("|") or bare.count("|") < 3:
        return False
    cells = [c.strip() for c in bare.strip("|").split("|") if c.strip()]
    return len(cells) >= 2 and 2 * sum(bool(_NUMBER.match(c)) for c in cells) >= len(cells)


def wrap(text: str, rng: random.Random) -> str | None:
    """Hard-wrap every line longer than W columns at W (W in 80-200): a paste into an issue box, a terminal copy."""
    width = rng.randint(80, 200)
    out, changed = [], False
    for line in lines_of(text):
        body, end = _body(line)
        if len(body) <= width:
            out.append(line)
            continue
        changed = True
        chunks = [body[i:i + width] for i in range(0, len(body), width)]
        out.append((end or "\n").join(chunks) + end)
    return "".join(out) if changed else None


def strip_rank(text: str, rng: random.Random) -> str | None:
    """Remove the ``[rankN]:`` / ``[rank N]:`` prefixes of every line."""
    lines = lines_of(text)
    if not any(RANK_PREFIX.match(line) for line in lines):
        return None
    return "".join(RANK_PREFIX.sub("", line, count=1) for line in lines)


def cut_after(text: str, rng: random.Random) -> str | None:
    """Cut the log at a random line after its last exception line (the category must stay). A message that ends in
    ':' goes on in the next line (``InstantiationException: Error in call to target 'x':`` then the cause): kept."""
    lines = lines_of(text)
    exc = exception_lines(lines)
    if not exc:
        return None
    end = exc[-1]
    while end + 1 < len(lines) and _body(lines[end])[0].rstrip().endswith(":") and lines[end + 1].strip():
        end += 1
    if end >= len(lines) - 1:
        return None
    return "".join(lines[:rng.randint(end + 1, len(lines) - 1)])


def cut_before(text: str, rng: random.Random) -> str | None:
    """Cut the log inside its first traceback: after the ``Traceback (most recent call last):`` header and at least
    one more line, before the traceback's exception line."""
    lines = lines_of(text)
    head = next((i for i, line in enumerate(lines) if TRACEBACK.search(_bare(line))), None)
    if head is None:
        return None
    exc = next((i for i in exception_lines(lines) if i > head), None)
    if exc is None or exc < head + 2:
        return None
    return "".join(lines[:rng.randint(head + 2, exc)])


def pad(text: str, rng: random.Random) -> str | None:
    """Indent every line by 2-8 spaces or a tab and add blank lines around the text (code-block or quote padding)."""
    indent = "\t" if rng.random() < 0.25 else " " * rng.randint(2, 8)
    lines = lines_of(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    before, after = "\n" * rng.randint(1, 2), "\n" * rng.randint(1, 2)
    return before + "".join(indent + line for line in lines) + after


def prose(text: str, rng: random.Random) -> str | None:
    """Insert 1-3 lines of English or Chinese prose at random line boundaries."""
    lines = lines_of(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for _ in range(rng.randint(1, 3)):
        lines.insert(rng.randint(0, len(lines)), rng.choice(PROSE) + "\n")
    return "".join(lines)


def reverse_table(text: str, rng: random.Random) -> str | None:
    """Reverse the order of each contiguous run of >= 2 metric rows (a table pasted newest first)."""
    lines = lines_of(text)
    if lines and not lines[-1].endswith("\n"):  # the last row moves: give it its line end
        lines[-1] += "\n"
    out: list[str] = []
    run: list[str] = []
    changed = False
    for line in lines + [""]:  # "" ends the last run
        if line and is_metric_row(line):
            run.append(line)
            continue
        changed |= len(run) >= 2
        out.extend(reversed(run) if len(run) >= 2 else run)
        out.append(line)
        run = []
    return "".join(out) if changed else None


def crlf(text: str, rng: random.Random) -> str | None:
    """Every line end to CRLF."""
    out = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return out if out != text else None


def glue(text: str, rng: random.Random) -> str | None:
    """Glue an exception line onto the line before it, as when a tqdm bar or a ``raise`` line lost its newline."""
    lines = lines_of(text)
    exc = [i for i in exception_lines(lines) if i > 0]
    if not exc:
        return None
    i = rng.choice(exc)
    lines[i - 1] = _body(lines[i - 1])[0] + lines[i]
    del lines[i]
    return "".join(lines)


def _prefix_lines(text: str, prefix_of: Callable[[int], str]) -> str | None:
    """Every non-blank line with ``prefix_of(i)`` in front (i: the line's index)."""
    lines = lines_of(text)
    if not any(line.strip() for line in lines):
        return None
    return "".join(prefix_of(i) + line if line.strip() else line for i, line in enumerate(lines))


def ray_prefix(text: str, rng: random.Random) -> str | None:
    """Ray's worker-output prefix on every line (``(WorkerDict pid=2547185)``, ``(pid=4242, ip=10.0.3.7)``): a job run
    under Ray (verl, OpenRLHF, vLLM's Ray executor) prints its workers' lines this way."""
    pid = rng.randint(1000, 4_000_000)
    name = rng.choice(("WorkerDict", "TaskRunner", "RayWorkerWrapper", "LLMRayActor"))
    prefix = f"({name} pid={pid}) " if rng.random() < 0.7 else f"(pid={pid}, ip=10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}) "
    return _prefix_lines(text, lambda i: prefix)


def time_prefix(text: str, rng: random.Random) -> str | None:
    """An RFC 3339 timestamp on every line, as ``kubectl logs --timestamps`` and ``docker logs -t`` print them."""
    start, day = rng.randint(0, 36_000), rng.randint(10, 28)

    def stamp(i: int) -> str:  # non-decreasing: a few lines per second
        t = start + i // 3
        return f"2025-05-{day:02d}T{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.{rng.randint(0, 999_999_999):09d}Z "
    return _prefix_lines(text, stamp)


def host_prefix(text: str, rng: random.Random) -> str | None:
    """A host or task label on every line: DeepSpeed's pdsh launcher (``worker-1: ``), ``srun --label`` (``3: ``),
    docker compose (``trainer-1  | ``)."""
    style = rng.randrange(3)
    node = rng.randint(0, 7)
    prefix = (f"worker-{node}: ", f"{node}: ", f"trainer-{node + 1}  | ")[style]
    return _prefix_lines(text, lambda i: prefix)


def quote(text: str, rng: random.Random) -> str | None:
    """A GitHub reply quoting the log: ``> `` before every line (blank lines become ``>``)."""
    lines = lines_of(text)
    if not lines:
        return None
    return "".join(("> " + line) if line.strip() else (">" + line.lstrip(" \t")) for line in lines)


MUTATIONS: dict[str, Mutation] = {
    "wrap": wrap, "strip_rank": strip_rank, "cut_after": cut_after, "cut_before": cut_before, "pad": pad,
    "prose": prose, "reverse_table": reverse_table, "crlf": crlf, "glue": glue,
    "ray_prefix": ray_prefix, "time_prefix": time_prefix, "host_prefix": host_prefix, "quote": quote,
}


def rng_for(seed: int, case: str, mutation: str) -> random.Random:
    """The generator of one variant: depends on the seed, the case and the mutation only (not on which other
    mutations run), and is the same in every process (a str seed is hashed with SHA-512, not Python's hash)."""
    return random.Random(f"{seed}:{case}:{mutation}")


# A finding says that the excerpt stops early (the paste or the file was cut): a field of its JSON says so, or its title
# or message does in words. Today GD999 "A traceback cut before its exception line", GD99x "(traceback
# cut, from its stack)" and the cut-traceback rules' "The log ends inside a traceback ... (the paste or the file was
# cut)". The subject must be the log/excerpt/paste/traceback: "completions were cut", "an image file is truncated" are
# findings about the run, not about the paste.
CUT_FIELDS: dict[str, frozenset[str]] = {  # JSON key of a finding -> values that mean "the excerpt stops early"
    "excerpt": frozenset({"cut", "truncated", "cut-early", "stops-early", "incomplete"}),
}
CUT_WORDS = re.compile(
    r"\b(?:log|excerpt|paste|traceback|stack)s?\b[^.;]{0,60}?"
    r"\b(?:cut|truncated|(?:stops?|ends?) (?:early|too early|short|inside|before|mid-?))", re.I)


def _finding_says_cut(doc: dict) -> bool:
    if any(str(doc.get(key, "")).lower() in values for key, values in CUT_FIELDS.items()):
        return True
    return bool(CUT_WORDS.search(f"{doc.get('title', '')}\n{doc.get('message', '')}"))


def says_cut_early(report) -> bool:
    """Whether a report (doctor's Report, or its JSON dict) has a finding saying the excerpt stops early."""
    findings = report.get("findings", []) if isinstance(report, dict) else report.findings
    return any(_finding_says_cut(f if isinstance(f, dict) else f.to_json()) for f in findings)
