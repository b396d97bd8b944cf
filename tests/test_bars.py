"""Progress bars summarised by the chunk scanner (doctor/sources/bars.py): the readers of bars end in the state
the line-by-line path leaves them in, on stretches of redraws of every shape (steps going up and down, step 0,
several descriptions, a rate word or not, bars glued or prefixed, which are fed as they are)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import line_and_scan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.engine import Session
from doctor.gate import engine
from doctor.sources import bars, matchers, quiet, scan

BLOCK = "\u2588".encode()


def _bar(desc: bytes, k: int, n: int = 9, rate: bytes = b"1.50s/it") -> bytes:
    return desc + b" 50%|" + BLOCK * 3 + b"   | %d/%d [00:04<00:20, %s]" % (k, n, rate)


FRAGMENTS = [
    _bar(b"Train:", 0), _bar(b"Train:", 1), _bar(b"Train:", 3), _bar(b"Train:", 2), _bar(b"Train:", 3, 12),
    _bar(b"Train:", 5, rate=b"2.10it/s") + b"\r", _bar(b"Train", 4), _bar(b"Val:", 1), _bar(b"Val:", 2),
    _bar(b"Map", 7, rate=b"?it/s"), _bar(b"Processed prompts:", 2), _bar(b"", 3), _bar(b"Train:", 6) + b"[INFO:swift] x",
    _bar(b"Map (num_proc=1):", 3, rate=b"? examples/s"), _bar(b"Map (num_proc=1):", 9, rate=b"812.50 examples/s"),
    _bar(b"Control:", 2), _bar(b"StopIteration:", 1), _bar(b"Loading weights:", 3, 26, b"10412.67it/s"),
    _bar(b"Loading checkpoint shards:", 0, 2, b"?it/s"), _bar(b"Loading weights:", 26, 26, b"9.5it/s"), b"[rank0]: " + _bar(b"Train:", 7),
    b"[INFO:swift] Saving model checkpoint to /o/checkpoint-2", b"***** Running training *****",
    # checkpoint saves among metric rows (sources/saves.py): taken, and refused
    _bar(b"Train:", 4) + b"[INFO:swift] Saving model checkpoint to /o/checkpoint-4",
    _bar(b"Train:", 4) + b"[INFO:swift] Saving model checkpoint to /o/vllm/checkpoint-4",
    b"[INFO:swift] model_parameter_info: PeftModelForCausalLM: 1M Params", b"[INFO:swift] hello",
    b"{'loss': '0.1', 'grad_norm': '0.2', 'reward': '0.5', 'global_step/max_steps': '3/9'}",
    b"RuntimeError: probability tensor contains either `inf`, `nan` or element < 0", b"plain line",
    b"Traceback (most recent call last):", b'  File "/x/y.py", line 3, in f', b"    y = 1",
    b"Killed", b"run sh: `swift rlhf --rlhf_type grpo`",
    # logger-prefix lines (sources/quiet.py): skipped, and lines that must be fed
    b"[WARNING:swift] some warning", b"[INFO:swift] best_model_checkpoint: None", b"[INFO:swift] VLLM engine up",
    b"[INFO:swift] Start connecting to vLLM server", b"[INFO:swift] KV cache usage 3 GiB", b"[INFO:swift] a\x1b[0m b",
    b"[INFO:swift] rank: 0, local_rank: 0, world_size: 2, local_world_size: 2", b"(VllmWorker pid=1) [INFO:swift] y",
    b"[INFO:swift] x 3.0it/s] z", b"[INFO:swift] one\rtwo", b"[WARNING:swift] Loading weights slowly",
    b"[INFO:swift] model_info: m", b"[INFO:swift] train_dataset: Dataset(rows=4)", b"[INFO:swift] model_kwargs: {}",
    b"[INFO:swift] The logging file will be saved in: /o/logging.jsonl", b"[INFO:swift] init engine done",
    # metric lines: the short cut, and lines that must not take it
    b"{'loss': '0.2', 'grad_norm': 'nan', 'reward': '0.0', 'reward_std': '0', 'global_step/max_steps': '4/9'}",
    b"{'loss': 0.3, 'grad_norm': 1.5, 'reward': 0.25, 'kl': 0.01, 'global_step/max_steps': '5/9'}\r",
    b"{'loss': '0.1', 'reward': '1', 'VLLM-0.8.5': '1', 'global_step/max_steps': '6/9'}",
    b"{'loss': '0.1', 'reward': '1', 'trl': '1', 'global_step/max_steps': '7/9'}",
    b"{'eval_loss': '0.5', 'eval_reward': '0.1'}", b"{'train_runtime': '10', 'train_loss': '0.1'}",
    b"{'loss': '0.1', 'reward': '1', 'global_step/max_steps': '8/9'", b"{'loss': '0.1',\t'reward': '1'}",
    b"{'loss': '0.1', 'reward': '1', 'Error': '1', 'global_step/max_steps': '9/9'}",
]


def _state(s: Session) -> dict:
    out: dict = {"findings": s.finish(), "exceptions": s.state.exceptions, "steps": s.state.metrics_steps, "ended": s.state.ended,
                 "run": (s.run.args, s.run.versions)}
    for r in s.rules:
        name = type(r).__name__
        if hasattr(r, "p"):
            p = r.p
            out[name] = (p.max_step, p.total_steps, p.step_line, p.step_seq, dict(p.phase_seq), dict(p.phase_line),
                         p.metrics_seq, p.swift_evidence, p.vllm_lines, p.last_path)
        elif name == "ProbabilityTensorNaN":
            out[name] = (r.progress, r.hits)
        elif name == "HostOomKilled":
            out[name] = (r.training, r.hits)
        if hasattr(r, "s"):
            out["series"] = (r.s.n, r.s.steps, r.s.where, r.s.cols, r.s.rmean, r.s.rstd)
    return out


def _same(data: bytes, tmp_path: Path, **opts) -> ChunkStats:
    a, b, ca, cb, sc = line_and_scan(data, tmp_path, **opts)
    assert ca == cb
    assert list(a.state.tails["log.txt"]) == list(b.state.tails["log.txt"])
    assert _state(a) == _state(b)
    return ChunkStats(sc.fed, sc.lineno)


class ChunkStats:
    def __init__(self, fed: int, lines: int):
        self.fed, self.lines = fed, lines


def test_summarised_with_the_catalog():
    assert bars.summarisable(Session())


def test_a_stretch_of_bars_is_fed_as_a_few(tmp_path):
    rnd = random.Random(1)
    lines = [_bar(b"Train:", rnd.randrange(0, 50), 50) for _ in range(3000)] + [b"Killed"]
    got = _same(b"\n".join(lines) + b"\n", tmp_path, fork=False)
    assert got.fed <= 6 and got.lines == 3001


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fork", [False, True])
def test_random_stretches(seed, fork, tmp_path):
    rnd = random.Random(seed)
    lines = [rnd.choice(FRAGMENTS[:16] + FRAGMENTS[-9:]) if rnd.random() < 0.8 else rnd.choice(FRAGMENTS) for _ in range(400)]
    _same(b"\n".join(lines) + b"\n", tmp_path, fork=fork, chunk=rnd.choice([64, 1000, scan.CHUNK]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=60), chunk=st.integers(1, 200))
def test_any_order(parts, chunk, tmp_path):
    _same(b"\n".join(parts), tmp_path, chunk=chunk, fork=False,
          matcher=matchers.matcher_for(Session().gate_words, "re"))


def test_metric_lines_take_the_short_cut(tmp_path):
    rows = [b"{'loss': '0.%d', 'grad_norm': '0.1', 'reward': '0.5', 'global_step/max_steps': '%d/500'}" % (i, i)
            for i in range(1, 500)]
    lines = [x for i, row in enumerate(rows, 1) for x in (_bar(b"Train:", i, 500), row)] + [b"Killed"]
    got = _same(b"\n".join(lines) + b"\n", tmp_path, fork=False)
    assert got.lines == len(lines)


def test_quiet_prefix_lines_are_only_counted(tmp_path):
    lines = [b"[INFO:swift] step note %d" % i if i % 2 else b"[WARNING:swift] warned %d" % i for i in range(2000)]
    lines += [b"[INFO:swift] Saving model checkpoint to /o/checkpoint-2", b"[INFO:swift] tail"]
    got = _same(b"\n".join(lines) + b"\n", tmp_path, fork=False)
    fast = engine() == "hyperscan"  # without Hyperscan every such line is fed
    assert got.lines == len(lines) and (got.fed <= 3 or not fast)
    # the hang rules' markers that are no gate word of their own are fed: the phase moves as line by line
    marks = [b"[INFO:swift] model_kwargs: {}", b"[INFO:swift] note", b"[INFO:swift] model_info: m",
             b"[INFO:swift] train_dataset: D", b"[INFO:swift] note 2", b"[INFO:swift] EngineCore started"]
    got = _same(b"\n".join(marks) + b"\n", tmp_path, fork=False)
    assert got.fed == 4 or not fast  # all but the two notes


def test_a_new_prefix_reader_turns_quiet_lines_off():
    s = Session()

    class Other:
        literals = ("[INFO:swift]",)

    s.rules.append(Other())
    assert quiet.QuietLines.of(s) is None
    assert (quiet.QuietLines.of(Session()) is not None) == (engine() == "hyperscan")


def test_a_new_reader_turns_summaries_off():
    s = Session()

    class Other:
        literals = ("%|",)

    s.rules.append(Other())
    assert not bars.summarisable(s)


_LAZY = bars.BAR_SOURCE.replace(rb"\[[0-9:<?, ]*(?:", rb"\[[0-9:<?, ]*?(?:")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([b"[", b"]", b"00:04", b"<", b"?", b", ", b" ", b"1.50", b"7", b"s/it", b"it/s", b"/",
                                 b" examples/s", b"\r", b"x", b"%|", b"| 3/9 ", BLOCK, b"Train: 50", b"\n"]),
                max_size=14))
def test_the_greedy_rate_reads_as_the_lazy_one(tail):
    """BAR_SOURCE's rate part is greedy (sources/bars.py): the same matches, spans and groups as the lazy pattern it
    replaced, whole, searched and over a block's lines."""
    import re
    assert _LAZY != bars.BAR_SOURCE
    lazy, greedy = re.compile(_LAZY), re.compile(bars.BAR_SOURCE)
    lines = [frag + b"".join(tail) for frag in (b"", *FRAGMENTS[:24])]
    for text in lines:
        for how in ("fullmatch", "search", "match"):
            a, b = getattr(lazy, how)(text), getattr(greedy, how)(text)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))
    block = b"\n".join(lines)
    multi = [re.compile(rb"(?m)^(?:" + p + rb")$") for p in (_LAZY, bars.BAR_SOURCE)]
    assert multi[0].findall(block) == multi[1].findall(block)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([b"[", b"]", b"00:04", b"<", b"?", b", ", b" ", b"1.50", b"7", b"s/it", b"it/s", b"/",
                                 b" examples/s", b"\r", b"x", b"%|", b"| 3/9 ", BLOCK, "\u258f".encode(),
                                 "\u2590".encode(), "\u2587".encode(), "\u0663".encode(), b"#", b"Train: 50", b"\n"]),
                max_size=14))
def test_the_text_pattern_reads_bars_as_the_bytes_one(tail):
    """BAR_TEXT over a block's text (sources/step_runs.py) finds what BAR_SOURCE finds over its bytes: the same lines,
    spans and groups (block characters at the ends of their range and past them, an Arabic-Indic digit that a text
    \\d would take), whole and over a block's lines."""
    import re
    text, raw = re.compile(bars.BAR_TEXT), re.compile(bars.BAR_SOURCE)
    lines = [frag + b"".join(tail) for frag in (b"", *FRAGMENTS[:24])]
    for line in lines:
        a, b = raw.fullmatch(line), text.fullmatch(line.decode("utf-8"))
        assert (a and tuple(g.decode() for g in a.groups())) == (b and b.groups())
    block = b"\n".join(lines)
    multi = re.compile(rb"(?m)^(?:" + bars.BAR_SOURCE + rb")$"), re.compile(r"(?m)^(?:" + bars.BAR_TEXT + r")$")
    assert [tuple(g.decode() for g in m) for m in multi[0].findall(block)] == multi[1].findall(block.decode("utf-8"))
