"""The fuzzer's properties, shared by the short run (tests/fuzz/test_fuzz.py) and the long one (tools/fuzz_long.py).

Each ``check_*`` takes raw input bytes and raises AssertionError (or any exception) when a property fails:
no exception escapes but the documented one-line InputError, rendered output has no control/bidi character,
JSON and SARIF stay valid (strict: no NaN/Infinity constants), markdown has no markup that came from the input.
"""
from __future__ import annotations

import json
import re
import struct
import sys
import tempfile
from pathlib import Path

from doctor.analyze import analyze
from doctor.model import Evidence, Finding, InputInfo, Report, Severity
from doctor.render import jsonr, markdown, sarif, text
from doctor.render.safe import unsafe
from doctor.sources.inputs import InputError

ROOT = Path(__file__).resolve().parents[2]
REAL_LOGS = sorted((ROOT / "fixtures" / "logs").glob("*/log.txt"))
_FORBIDDEN_MD = {"html_inline", "html_block", "link_open", "image"}
# the renderer's own folding (issue 17.11): <details><summary>tool text</summary> ... </details>, nothing from input
_OWN_FOLD = re.compile(r"(<details><summary>[\w ,.()-]+</summary>|</details>)\n?")


def _strict_json(out: str) -> object:
    def no_constant(c: str) -> object:
        raise AssertionError(f"JSON holds the non-standard constant {c}")
    return json.loads(out, parse_constant=no_constant)


def _own_link(tok) -> bool:
    """A link the tool itself makes: a known-issues thread (doctor/known), from its offline index, never input."""
    from doctor.known import safe_url
    return tok.type == "link_open" and safe_url(tok.attrGet("href") or "")


def _md_tokens(md: str):
    from markdown_it import MarkdownIt
    for tok in MarkdownIt("commonmark").enable("table").parse(md):
        yield tok
        yield from tok.children or ()


def check_rendered(rep: Report) -> None:
    """Every renderer: no control/bidi/surrogate character; JSON/SARIF valid; markdown without input markup."""
    for name, render in (("text", text.render), ("markdown", markdown.render), ("json", jsonr.render),
                         ("sarif", sarif.render)):
        out = render(rep)
        bad = sorted({hex(ord(c)) for c in out if c not in "\n\t" and unsafe(c)})
        assert not bad, f"{name} output holds {bad}"
        out.encode("utf-8")  # strict: no lone surrogate left
        if name in ("json", "sarif"):
            _strict_json(out)
        if name == "markdown":
            try:
                import markdown_it  # noqa: F401
            except ImportError:
                continue
            injected = [(t.type, t.content) for t in _md_tokens(out)
                        if t.type in _FORBIDDEN_MD and t.content not in ("<sub>", "</sub>")
                        and not _own_link(t) and not _OWN_FOLD.fullmatch(t.content)]
            assert not injected, f"markdown markup from the input: {injected[:3]}"


def check_log_bytes(data: bytes, name: str = "x.log") -> None:
    """analyze on one file holding ``data``: a report (checked) or a one-line InputError naming the file."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_bytes(data)
        try:
            rep = analyze([str(f)])
        except InputError as e:
            assert str(e).startswith(str(f)) and "\n" not in str(e), str(e)
            return
        check_rendered(rep)


def check_run_dir(files: dict[str, bytes]) -> None:
    """analyze on a run directory holding ``files`` (args.json, command.txt, logging.jsonl, logs)."""
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        run.mkdir()
        for n, data in files.items():
            (run / n).write_bytes(data)
        try:
            rep = analyze([str(run)])
        except InputError as e:
            assert str(e).startswith(str(run)), str(e)
            return
        check_rendered(rep)


def check_safetensors(header: bytes, declared: int | None = None, tail: bytes = b"") -> None:
    """The checkpoint gate on one model.safetensors built from ``header`` (length prefix ``declared``)."""
    from doctor.ckpt import check_paths
    with tempfile.TemporaryDirectory() as d:
        ck = Path(d) / "checkpoint-1"
        ck.mkdir()
        n = len(header) if declared is None else declared
        (ck / "model.safetensors").write_bytes(struct.pack("<Q", n % (1 << 64)) + header + tail)
        (ck / "trainer_state.json").write_text('{"global_step": 1}')
        check_rendered(check_paths([str(ck)]))


def check_strings(strings: list[str]) -> None:
    """A report whose every field is an arbitrary string (what a rule could copy from an input)."""
    s = (strings + ["x"] * 6)[:6]
    f = Finding("GD999", "unrecognised-failure", "other", Severity.error, s[0], s[1], fix=(s[2], s[3]),
                evidence=(Evidence(s[4], 3, s[5]),))
    rep = Report("0.1.0", [InputInfo(s[4], "log"), InputInfo(s[0], "skipped", s[1])],
                 {"framework": "ms-swift", "framework_version": s[3], "args": {s[2]: s[5], "lr": float("nan")}}, [f])
    check_rendered(rep)


def _cli_exit(args: list[str], documented: tuple[int, ...] = (0, 1, 2)) -> None:
    """The real command in-process: an exit status from the contract, never a traceback nor an internal error."""
    from typer.testing import CliRunner

    from doctor.cli import app
    r = CliRunner().invoke(app, args)
    out = r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)  # escaped: exit 1 too
    assert r.exit_code in documented, (r.exit_code, out[-2000:], r.exception)
    assert "Traceback" not in out and "internal error" not in out, out[-2000:]
    if r.exit_code == 2:
        assert len([x for x in out.splitlines() if x.startswith("grpo-doctor: ")]) == 1, out[-2000:]


def check_config(data: bytes, pyproject: bool) -> None:
    """A configuration file, named by --config and found in the working directory: 0/1 (obeyed) or 2 (one line)."""
    import os
    log = ROOT / "fixtures" / "logs"
    sample = next(iter(sorted(log.glob("*/log.txt"))), None)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / ("pyproject.toml" if pyproject else "grpo-doctor.toml")
        f.write_bytes(data)
        target = str(sample) if sample else str(f)
        _cli_exit(["analyze", "--config", str(f), target, "--format", "json"])
        if pyproject:
            here = os.getcwd()
            os.chdir(d)  # found in the working directory, as ruff finds it
            try:
                _cli_exit(["analyze", target, "--format", "json"])
            finally:
                os.chdir(here)


def check_checkpoint_files(files: dict[str, bytes]) -> None:
    """check-ckpt and analyze on a run folder whose checkpoint holds ``files`` (a .safetensors value is its JSON
    header, packed here with its length and a few data bytes)."""
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        ck = run / "checkpoint-2"
        ck.mkdir(parents=True)
        for n, data in files.items():
            if n.endswith(".safetensors"):
                data = struct.pack("<Q", len(data)) + data + b"\0" * 16
            (ck / n).write_bytes(data)
            if n == "args.json":
                (run / n).write_bytes(data)
        (run / "train.log").write_bytes(b"{'loss': 0.5, 'reward': 0.1, 'global_step/max_steps': '2/4'}\n")
        _cli_exit(["check-ckpt", str(ck), "--format", "json"])
        _cli_exit(["analyze", str(run), "--format", "json"])


# ------------------------------------------------------------------------------ watch's live inputs (issue 30)
# traced peak of the live analysis <= 48 MiB (the first example imports the rules' lazy modules: 32 MiB) + 16 bytes per
# input byte
WATCH_MEMORY = (48 << 20, 16)


def _raise(e: BaseException) -> None:
    raise e


def check_watch_inputs(chunks: list[tuple[int, bytes]], files: list[tuple[str, bool, bytes]], limit: int) -> None:
    """`watch`'s live side in-process, with no child (doctor/live/supervisor.py, analysis.py, tee.py): each chunk the
    child would have written to stdout (0) or stderr (1) goes through Watch._through (our fd, the console log, the
    analyser's feed of ``limit`` bytes); the analyser's own loop then takes them, and before each of its run-folder
    scans the next of ``files`` is written (``(name, append, bytes)``: logging.jsonl / args.json appearing, growing,
    rewritten). Properties: no exception from the analysis (the error it would say once is raised here), a report
    that renders safely, a byte-exact pass-through, a console log with every byte (plus at most the newline that
    ends each stream; stdout and stderr merge by lines there), and traced memory linear in the input."""
    import itertools
    import os
    import tracemalloc
    from collections import deque
    from types import SimpleNamespace

    from doctor.live.supervisor import Watch, WatchOptions
    from doctor.live.tee import ConsoleLog, Feed, Stream
    ticks = itertools.count()
    clock = lambda: next(ticks) * 0.5  # noqa: E731 - a fake monotonic clock: scans and evaluations come by count
    with tempfile.TemporaryDirectory() as d, open(Path(d) / "out", "wb+") as fo, open(Path(d) / "err", "wb+") as fe:
        run = Path(d) / "run"
        swift = run / "v0-20260101-000000"   # where ms-swift writes logging.jsonl and args.json
        o = WatchOptions(run_dir=str(run), preflight=False, gpu_interval=0, poll=1.0, eval_interval=3.0,
                         report_interval=1e9, out_fd=fo.fileno(), err_fd=fe.fileno(), backlog_max=limit, lag_max=1e9)
        w = Watch([sys.executable, "-c", "pass"], o, clock)
        w._paths()
        w._begin_session()
        w.console = ConsoleLog(w.console_path)
        w._begin_watching()
        w.proc = SimpleNamespace(pid=0, poll=lambda: 0)   # the child has exited: a hang is never acted on
        w._analysis_failed = _raise
        pending = deque(files)
        scan = w._scan

        def scan_after_a_write() -> None:
            if pending:
                name, append, data = pending.popleft()
                swift.mkdir(parents=True, exist_ok=True)
                with open(swift / name, "ab" if append else "wb") as f:
                    f.write(data)
            scan()
        w._scan = scan_after_a_write
        streams = [Stream(-1, fo.fileno()), Stream(-2, fe.fileno())]
        w.feed = Feed(limit, 1e9, clock)
        tracemalloc.start()
        try:
            for i, data in chunks:
                w._through(streams[i], data)
            for s in streams:
                w.console.close_stream(s)
            w.feed.close()
            w._analyser(streams)
            while pending:
                w._scan()
            w._scan()
            check_rendered(w._final_report(1))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            w.console.close()
        size = sum(len(c) for _, c in chunks) + sum(len(f[2]) for f in files)
        assert peak <= WATCH_MEMORY[0] + WATCH_MEMORY[1] * size, f"traced peak {peak >> 20} MiB for {size:,} bytes"
        wrote = [b"".join(c for i, c in chunks if i == k) for k in (0, 1)]
        fo.seek(0)
        fe.seek(0)
        assert fo.read() == wrote[0] and fe.read() == wrote[1], "the pass-through is not byte-exact"
        extra = os.path.getsize(w.console_path) - len(wrote[0]) - len(wrote[1])
        assert 0 <= extra <= sum(1 for b in wrote if b and not b.endswith(b"\n")), extra
