"""Find the inputs in what the user pointed at, and stream each into a Session.

A run directory as ms-swift writes it (any nesting), console logs saved by hand (``*.log``,
``nohup.out``, ``*.txt``, one per node or rank), a single file, or ``-`` for standard input.
Nothing is executed or unpickled: ``*.pt``/``*.bin``/``*.pth`` are never opened here. Only regular files are
read (safeio.open_regular: no FIFO, socket or device, every read bounded); inside a run directory a symlink that
leads out of it is not followed, and what was skipped is listed in the report's inputs (kind "skipped", a note).
"""
from __future__ import annotations

import io
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..model import InputInfo
from ..signals import Completions, GpuSnapshot, Where, console_row
from .checkpoint import CHECKPOINT_NAME, checkpoint_order, is_checkpoint_dir
from .compressed import READABLE, CompressionError, codec_of, damage, decompressing, is_streamed, suffix_codec
from .kinds import (  # noqa: F401
    LOG_NAMES,
    LOG_SUFFIXES,
    LOGGER_KINDS,
    SKIP_DIRS,
    SKIP_NAMES,
    TRAINER_STATE,
    classify,
    gpu_kind,
    logger_kind,
    looks_binary,
    nvidia_smi_other,
)
from .logtext import MAX_LINE, LineReader, decode, physical_lines
from .newest_first import reordered
from .reflow import MAX_REFLOW, needs_reflow, reflowed
from .safeio import NotRegular, link_out, open_regular, read_head, regular_size, walk, what_is
from .sparse import is_sparse, skipping_holes

MAX_SMALL = 32 * 1024 * 1024  # the most read of a small input (a report, an explicit command file)
MAX_LOGS = 1024  # console logs read from one folder (one per rank of a 1024-rank job)
MAX_CONFIG = 4 * 1024 * 1024  # args.json / command.txt / wandb config larger than this are not configuration files


class InputError(Exception):
    """One line for the user: the file and what to do. Exit code 2."""


@dataclass(frozen=True)
class Input:
    """An input file (or standard input) and how it is shown."""
    path: Path | None   # None: standard input
    display: str
    kind: str           # log | metrics | completions | args | command | skipped | checkpoint (a checkpoint-N/ folder)
    note: str = ""      # skipped: why

    def info(self) -> InputInfo:
        return InputInfo(self.display, self.kind, self.note)


# the notes of a file the run wrote that could not be read (not a logger's second copy, not another tool's output)
_UNREAD = ("permission denied", "cannot read it", "a symlink out of the run directory", "a symlinked directory out")
# inputs that record how the run went to its end; args.json, a command file, GPU snapshots and checkpoints (their
# trainer_state.json stops at the save) do not
_RECORDS = ("log", "metrics", "completions", "report", *(k for k in LOGGER_KINDS if k != "trainer-state"))
_SMALL = ("args", "command", "report", "wandb-summary", "wandb-meta", "wandb-config")
_ORDER = {"args": 0, "command": 1, "log": 2, "metrics": 3, "completions": 4, "gpu": 5, "report": 6,
          "tensorboard": 7, "wandb-summary": 8, "wandb-meta": 1, "wandb-config": 0, "trainer-state": 8, "skipped": 9,
          "checkpoint": 10}


def _check_readable(path: Path, display: str) -> None:
    try:
        with open_regular(path) as f:
            f.read(1)
    except NotRegular as e:
        raise InputError(f"{display}: {e.what}, not a regular file; pass a saved log file, or pipe the text in: "
                         f"grpo-doctor analyze - < {display}") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or run as its owner") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror}); check the path") from None


def _explicit_file(path: Path, display: str) -> Input:
    _check_readable(path, display)
    if path.name.startswith("events.out.tfevents."):
        return Input(path, display, "tensorboard")
    kind = classify(path) or "log"
    if path.suffix.lower() == ".json" and kind == "log":
        from .jsoncost import too_costly
        from .reports import is_report
        try:
            with open_regular(path) as f:
                raw = f.read(MAX_SMALL)
            # a file too costly to decode is read as a log (the scanner's cost is bounded), never as a report
            obj = json.loads(decode(raw)) if too_costly(raw) is None else None
            if is_report(obj):
                kind = "report"
        except (OSError, ValueError, RecursionError):
            pass
    try:
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            head = f.read(8192)
    except OSError as e:
        raise InputError(f"{display}: cannot read ({e.strerror}); check the path") from None
    if st.st_size == 0:
        raise InputError(f"{display}: the file is empty; pass the console log of the run (or - and paste it)")
    codec = codec_of(head)
    if codec is not None:   # a compressed log (sources/compressed.py): what it holds comes from its name
        if codec not in READABLE:
            try:
                decompressing(io.BytesIO(head), codec, display)
            except CompressionError as e:
                raise InputError(str(e)) from None
        packed = suffix_codec(path.name)
        inner = classify(path.with_name(packed[1])) if packed else None
        return Input(path, display, inner if inner in ("metrics", "completions") else "log")
    if looks_binary(head):
        raise InputError(f"{display}: looks like a binary file, not a log; pass the console log, logging.jsonl "
                         "or the run directory")
    if kind == "log" and gpu_kind(path, head, st.st_size):
        kind = "gpu"
    if kind == "log" and nvidia_smi_other(head):  # dmon/pmon/topo: no log, no snapshot; refused as preflight does
        from .gpu import SnapshotError, parse_text
        try:
            parse_text(decode(head), display)
        except SnapshotError as e:
            raise InputError(str(e)) from None
    return Input(path, display, kind)


def path_exists(path: Path, display: str) -> bool:
    """Whether ``path`` (or a link there) exists; InputError when the question itself fails (a name too long, a
    folder on the way that cannot be searched): one line, never a traceback."""
    try:
        return path.exists() or path.is_symlink()
    except OSError as e:
        raise InputError(f"{display}: cannot read it ({e.strerror}); check the path") from None


def discover(paths: list[str], exclude: frozenset[Path] = frozenset()) -> list[Input]:
    """The inputs under ``paths``; ``exclude``: folders not entered (the run folders of a folder of runs, read
    on their own)."""
    found: list[Input] = []
    stdin_used = False
    for p in paths:
        if p == "-":
            if stdin_used:
                raise InputError("-: standard input can be given only once")
            stdin_used = True
            found.append(Input(None, "<stdin>", "log"))
            continue
        path = Path(p)
        if not path_exists(path, p):
            raise InputError(f"{p}: no such file or directory; pass a run directory, a log file, or - for stdin")
        if path.is_dir():
            if path.name.startswith("checkpoint-") and is_checkpoint_dir(path):
                found.append(Input(path, p, "checkpoint"))  # a checkpoint given itself: its facts, and its logs
            found.extend(_walk(path, p, exclude))
        else:
            found.append(_explicit_file(path, p))
    found.sort(key=lambda i: _ORDER.get(i.kind, 9))
    return found


def _skip(fp: Path, root: Path, display_root: str, why: str) -> Input:
    return Input(None, _display(fp, root, display_root), "skipped", why)


def _candidate(fp: Path, root: Path, display_root: str, kind: str | None = None) -> tuple[str | None, Input | None]:
    """(kind, None) for a file to read, (None, a skipped Input) for one to name in the report, (None, None) for
    a file that is not an input at all. Never opens a link out of the run dir, a FIFO, socket or device.
    ``kind``: already known (a logger's file), else from the name."""
    kind = kind or classify(fp)
    if kind is None:
        return None, None
    try:
        lst = fp.lstat()
        if stat.S_ISLNK(lst.st_mode) and link_out(fp, root):
            return None, _skip(fp, root, display_root, "a symlink out of the run directory, not followed")
        st = fp.stat()
    except OSError as e:
        return None, _skip(fp, root, display_root, f"cannot read it ({e.strerror})")
    what = what_is(st.st_mode)
    if what is not None:
        return None, _skip(fp, root, display_root, f"{what}, not a regular file")
    if st.st_size == 0:
        return None, None
    if kind in _SMALL and st.st_size > (MAX_SMALL if kind == "report" else MAX_CONFIG):
        # json.loads takes ~25x a file's size: an args.json of 30 MB took 817 MiB; real ones are tens of kB
        return None, _skip(fp, root, display_root, f"{st.st_size:,} bytes, larger than such a file takes: not read")
    if not os.access(fp, os.R_OK):
        return None, _skip(fp, root, display_root, "permission denied")
    if kind in _SMALL and fp.suffix.lower() == ".json":
        # within the size cap, 4 MiB of `{"a":[]},` still took 158 MiB to decode (sources/jsoncost.py)
        from .jsoncost import too_costly
        try:
            costly = too_costly(read_head(fp, MAX_SMALL, root=root))
        except OSError as e:
            return None, _skip(fp, root, display_root, f"cannot read it ({e.strerror})")
        if costly is not None:
            return None, _skip(fp, root, display_root, costly)
    if kind == "log" and suffix_codec(fp.name) is not None:
        return kind, None   # decompressed when read (open_input); its raw bytes are no text to sniff
    if kind == "log":
        try:
            with open_regular(fp, root=root) as f:
                head = f.read(8192)
        except OSError as e:
            return None, _skip(fp, root, display_root, f"cannot read it ({e.strerror})")
        if looks_binary(head):
            return None, None
        if gpu_kind(fp, head, st.st_size):
            kind = "gpu"
        elif nvidia_smi_other(head):
            return None, _skip(fp, root, display_root, f"nvidia-smi {nvidia_smi_other(head)} output, not a log or "
                               "a GPU snapshot this tool reads")
    return kind, None


def _walk(root: Path, display_root: str, exclude: frozenset[Path] = frozenset()) -> list[Input]:
    if not os.access(root, os.R_OK | os.X_OK):
        raise InputError(f"{display_root}: permission denied; make the directory readable")
    out: list[Input] = []
    skipped: list[Input] = []
    args_files: list[Path] = []
    copies: list[Input] = []   # console copies of the loggers (wandb output.log, SwanLab console)
    configs: list[Input] = []  # wandb config.yaml: the arguments when there is no args.json
    ckpts: list[Path] = []     # checkpoint-N/ folders (not under runs/), found by this same walk
    for dirpath, dirnames, filenames in walk(root):
        d = Path(dirpath)
        in_runs = "runs" in d.relative_to(root).parts
        if not in_runs:
            ckpts.extend(d / n for n in dirnames if CHECKPOINT_NAME.match(n) and not os.path.islink(d / n))
        # runs/ holds TensorBoard event files only (and images): entered for those
        dirnames[:] = sorted(n for n in dirnames if (n not in SKIP_DIRS or n == "runs") and not n.startswith("checkpoint-")
                             and not n.startswith("global_step") and not n.startswith(".") and d / n not in exclude)
        for n in dirnames:  # os.walk does not descend into linked directories; name those that lead out
            if os.path.islink(d / n) and link_out(d / n, root):
                skipped.append(_skip(d / n, root, display_root, "a symlinked directory out of the run directory, "
                                                                "not followed"))
        for name in sorted(filenames):
            fp = d / name
            logger = _logger_file(fp, root, display_root)
            if logger is not None:
                if logger.kind == "copy-log":
                    copies.append(logger)
                elif logger.kind == "skipped":
                    skipped.append(logger)
                elif logger.kind == "wandb-config":
                    configs.append(logger)
                else:
                    out.append(logger)
                continue
            if in_runs or "wandb" in fp.relative_to(root).parts:
                continue
            kind, skip = _candidate(fp, root, display_root)
            if skip is not None:
                skipped.append(skip)
            if kind is None:
                continue
            if kind == "args":
                args_files.append(fp)
                continue
            out.append(Input(fp, _display(fp, root, display_root), kind))
    if args_files:
        # the run-level args.json wins over copies deeper down; among equals, the newest run (last sorted)
        best = sorted(args_files, key=lambda p: (len(p.relative_to(root).parts), str(p)))
        shallow = [p for p in best if len(p.relative_to(root).parts) == len(best[0].relative_to(root).parts)]
        chosen = shallow[-1]
        out.append(Input(chosen, _display(chosen, root, display_root), "args"))
    elif configs:
        out.append(configs[-1])
    out, dropped = _cap_logs(out)
    if dropped:
        skipped.append(Input(None, f"{dropped:,} more log file(s) under {display_root}", "skipped",
                             f"a folder of more than {MAX_LOGS:,} logs: the {MAX_LOGS:,} largest were read; pass the "
                             "logs to read"))
    has_log = any(i.kind == "log" for i in out)
    for c in copies:
        if has_log:
            skipped.append(Input(None, c.display, "skipped", "a logger's copy of the console log: the run "
                                 "directory's own console log is read instead (no line counted twice)"))
        else:
            out.append(Input(c.path, c.display, "log"))
            has_log = True   # one copy is enough: two loggers copied the same console
    out.extend(_checkpoint_states(ckpts, out, skipped, root, display_root))
    ckpt_inputs = [Input(c, _display(c, root, display_root), "checkpoint") for c in sorted(ckpts, key=checkpoint_order)]
    if not out and not ckpt_inputs:
        why = f"; {len(skipped)} skipped: {skipped[0].display}: {skipped[0].note}" if skipped else ""
        raise InputError(f"no log found in {display_root} (no console log, logging.jsonl, completions.jsonl or "
                         f"args.json{why}); pass the run's output directory or a saved console log")
    unread = [s for s in skipped if s.note.startswith(_UNREAD)]
    if unread and not any(i.kind in _RECORDS for i in out):
        # a checkpoint or an args.json alone cannot tell how the run ended: "No problem found" would be a guess
        raise InputError(f"{unread[0].display}: skipped ({unread[0].note}) and nothing else here records the run "
                         f"(log, logging.jsonl, metrics); make it readable, or pass a log that is")
    return out + skipped + ckpt_inputs


def _cap_logs(found: list[Input]) -> tuple[list[Input], int]:
    """At most MAX_LOGS console logs (the largest: a folder of thousands of small files is not one run's logs, and
    each file read costs its own start); the other inputs all stay. (inputs, how many logs were left out)"""
    logs = [i for i in found if i.kind == "log"]
    if len(logs) <= MAX_LOGS:
        return found, 0
    keep = {id(i) for i in sorted(logs, key=lambda i: -(regular_size(i.path) or 0) if i.path else 0)[:MAX_LOGS]}
    return [i for i in found if i.kind != "log" or id(i) in keep], len(logs) - MAX_LOGS


def _checkpoint_states(ckpts: list[Path], found: list[Input], skipped: list[Input], root: Path,
                       display_root: str) -> list[Input]:
    """The trainer_state.json of the last checkpoint-N/ of each folder that holds checkpoints and no trainer_state.json
    of its own (``found``): the newest log_history of that run, read once (an older checkpoint's is a prefix of it)."""
    have = {i.path.parent for i in found if i.kind == "trainer-state" and i.path is not None}
    by_dir: dict[Path, list[Path]] = {}
    for c in ckpts:
        by_dir.setdefault(c.parent, []).append(c)
    out: list[Input] = []
    for parent, cs in sorted(by_dir.items()):
        if parent in have:
            continue
        for c in sorted(cs, key=checkpoint_order, reverse=True):
            fp = c / TRAINER_STATE
            if not fp.is_file() and not fp.is_symlink():
                continue
            kind, skip = _candidate(fp, root, display_root)
            if skip is not None:
                skipped.append(skip)
            elif kind is not None:
                out.append(Input(fp, _display(fp, root, display_root), kind))
            break
    return out


def _logger_file(fp: Path, root: Path, display_root: str) -> Input | None:
    """An input of the run's own loggers (TensorBoard, wandb, SwanLab; see sources/loggers.py), or None."""
    kind, note = logger_kind(fp.relative_to(root))
    if kind is None or kind == "skipped":
        return _skip(fp, root, display_root, note) if kind else None
    real, skip = _candidate(fp, root, display_root, "log" if kind == "copy-log" else kind)
    return skip or (Input(fp, _display(fp, root, display_root), kind) if real else None)


def _display(fp: Path, root: Path, display_root: str) -> str:
    rel = fp.relative_to(root)
    return str(Path(display_root) / rel)


def open_input(inp: Input) -> BinaryIO:
    """The input's bytes: a compressed file or standard input decompressed as it is read (sources/compressed.py)."""
    try:
        stream = sys.stdin.buffer if inp.path is None else open_regular(inp.path)
        codec = codec_of(stream.peek(8)[:8]) if hasattr(stream, "peek") else None
        if codec is not None:
            return decompressing(stream, codec, inp.display)  # type: ignore[return-value]
        if inp.path is not None and is_sparse(stream.fileno()):
            return skipping_holes(stream)  # type: ignore[return-value]
        return stream
    except CompressionError as e:
        raise InputError(str(e)) from None
    except NotRegular as e:
        raise InputError(f"{inp.display}: {e.what}; pass a regular file") from None
    except PermissionError:
        raise InputError(f"{inp.display}: permission denied; make the file readable") from None
    except OSError as e:
        raise InputError(f"{inp.display}: cannot read ({e.strerror})") from None


def _feed_tables(session, display: str) -> None:
    """A metric table (sources/tables.py) or key/value rows (sources/keyvalue.py) pasted in a log that gave no metric row
    of its own, from its tail."""
    tail = session.state.tails.get(display)
    if not tail:
        return
    rows = []
    if any("|" in x.raw or "\t" in x.raw or "  " in x.raw or "," in x.raw for x in tail):
        from .tables import tail_metrics  # noqa: PLC0415
        rows = tail_metrics(tail)
    if not rows and any(":" in x.raw or "=" in x.raw or "loss " in x.raw or "reward " in x.raw or x.raw[:1] == "|"
                        for x in tail):
        from .keyvalue import tail_metrics as kv_metrics  # noqa: PLC0415
        rows = kv_metrics(tail)
    if rows:
        session.state.table_metrics = True   # its columns are the ones the user chose: a missing key says nothing
        session.emit_many(rows)


def read_small(inp: Input) -> str:
    with open_input(inp) as f:
        data = f.read(MAX_SMALL + 1)
    return decode(data[:MAX_SMALL])


class _Rejoined:
    """The bytes already read from a pipe, then the rest of it."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = (self.head, b"") if n < 0 or n >= len(self.head) else (self.head[:n], self.head[n:])
            return out
        return self.rest.read(n)

    read1 = read

    def close(self) -> None:
        self.rest.close()


def _read_upto(stream: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes; one read1 at a time, so that a terminal's single Ctrl-D ends the input."""
    read = getattr(stream, "read1", stream.read)
    parts: list[bytes] = []
    got = 0
    while got < limit:
        chunk = read(limit - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _reflow_or_rewind(inp: Input, stream: BinaryIO, session, counter: list[int],
                      gpu_tables: list | None = None) -> BinaryIO | None:
    """A small log whose every line a paste indented, or whose lines a terminal hard-wrapped, is fed here put back
    in its printed lines (None returned); any other log comes back as a stream positioned at its start. The
    nvidia-smi tables of a small log go in ``gpu_tables`` (sources/gpu_in_log.py), to be fed after its lines."""
    plain = inp.path is not None and not is_streamed(stream)
    if plain:
        try:
            if os.fstat(stream.fileno()).st_size > MAX_REFLOW:
                return stream
        except (OSError, ValueError, AttributeError):
            return stream
    data = _read_upto(stream, MAX_REFLOW + 1)
    if gpu_tables is not None and len(data) <= MAX_REFLOW and (b"MiB /" in data or b"NVIDIA-SMI" in data):
        from .gpu_in_log import tables_in  # noqa: PLC0415 - only a paste that holds an nvidia-smi table
        gpu_tables.extend(tables_in(decode(data).replace("\r\n", "\n").split("\n")))
    plan = needs_reflow(data) if len(data) <= MAX_REFLOW else None
    # metric rows pasted newest first are fed in the order they were logged
    lines = reflowed(data, *plan) if plan is not None else reordered(data) if len(data) <= MAX_REFLOW else None
    if lines is None:
        if plain:
            stream.seek(0)
            return stream
        if len(data) <= MAX_REFLOW:  # the whole input was read (a terminal gives its end once: never read again)
            return io.BytesIO(data)
        return _Rejoined(data, stream)  # type: ignore[return-value]
    session.begin_log(inp.display)
    reader = LineReader(inp.display, counter)
    for lineno, line in lines:
        for ll in reader.line(lineno, line[:MAX_LINE]):
            session.feed_line(ll)
    return None


def _meter_begin(path: Path, stream: BinaryIO) -> None:
    """The progress bar's file (doctor/progress.py): its size on disk and the descriptor the reader moves (of the
    compressed file under a decompressing stream: its size is the compressed one too)."""
    from ..progress import METER
    if not METER.total:
        return
    under = getattr(getattr(stream, "raw", None), "_raw", stream)
    try:
        fd = under.fileno()
    except (OSError, ValueError, AttributeError):
        fd = None
    METER.begin(regular_size(path) or 0, fd)


def feed_input(inp: Input, session, counter: list[int], scan_options: dict | None = None) -> None:
    """Stream one input into the session. A log file goes through the chunk scanner (``scan_options``:
    its keyword arguments, or ``{"lines": True}`` for the line-by-line path); standard input line by line."""
    if inp.kind == "args":
        text = read_small(inp)
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return  # a broken args.json inside a run dir: the logs still count
        if isinstance(obj, dict):
            session.run.add_args_json(obj)
        return
    if inp.kind == "command":
        session.run.add_command(read_small(inp), "command")
        return
    if inp.kind in ("report", "skipped"):
        return  # reports are merged by doctor.analyze; skipped inputs are only named
    if inp.kind in LOGGER_KINDS:
        raise ValueError(f"{inp.display}: a logger input is fed by sources.loggers.feed")
    if inp.kind == "gpu":
        from .gpu import SnapshotError, parse_text  # noqa: PLC0415
        try:
            samples = parse_text(read_small(inp), inp.display)
        except SnapshotError:
            return  # sniffed as nvidia-smi but unreadable: nothing to say about GPUs
        counter[0] += 1
        session.emit(GpuSnapshot(inp.display, samples, counter[0]))
        return
    stream = open_input(inp)
    if inp.path is not None:
        _meter_begin(inp.path, stream)
    if inp.path is None and not stream.peek(1):
        raise InputError("<stdin>: standard input is empty; pipe or paste the console log of the run (an empty "
                         "input is an error, as an empty file is)")
    try:
        if inp.kind == "log":
            from . import scan  # the chunk scanner and its matchers: only when a log is read

            steps = session.state.metrics_steps
            gpu_tables: list = []
            log = _reflow_or_rewind(inp, stream, session, counter, gpu_tables)
            if log is None:
                pass  # a paste read whole and fed as its program printed it (sources/reflow.py)
            elif inp.path is not None and not is_streamed(stream) and \
                    not (opts := dict(scan_options or {})).pop("lines", False) and scan.usable(session, log):
                scan.scan_file(session, inp.display, log, counter, **opts)
            else:
                session.begin_log(inp.display)
                for line in LineReader(inp.display, counter).lines(log):
                    session.feed_line(line)
            if session.state.metrics_steps == steps and session.state.console_metrics:
                _feed_tables(session, inp.display)
            for rows in gpu_tables:
                counter[0] += 1
                session.emit(GpuSnapshot(inp.display, rows, counter[0]))
        elif inp.kind == "metrics":
            from ..engine.columns import Block  # noqa: PLC0415 - only when a logging.jsonl is read
            from .jsonl_rows import row_tables  # noqa: PLC0415

            display = inp.display
            for block, table in row_tables(stream):
                seq = counter[0]
                counter[0] += len(block)
                ms = [console_row(values, display, lineno, seq + i, finite, "jsonl")
                      for i, (lineno, values, finite) in enumerate(block, 1)]
                cols = Block.of(ms) if table is not None else None
                if cols is not None:
                    cols.take_table(table)
                session.emit_many(ms)
        elif inp.kind == "completions":
            for lineno, data in physical_lines(stream, max_line=16 * 1024 * 1024):
                try:
                    row = json.loads(decode(data))
                except (ValueError, RecursionError):
                    continue
                if isinstance(row, dict):
                    counter[0] += 1
                    session.emit(Completions(row, Where(inp.display, lineno)))
    except PermissionError:
        raise InputError(f"{inp.display}: permission denied while reading") from None
    except OSError as e:
        raise InputError(f"{inp.display}: read failed ({e.strerror})") from None
    finally:
        why = damage(stream)
        if why:
            session.input_notes[inp.display] = why
        if inp.path is not None:
            stream.close()
