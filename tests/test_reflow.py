"""A paste put back in its printed lines (doctor/sources/reflow.py), an exception glued onto the line before it
(sources/traceback.py) and two ranks' writes on one line (sources/logtext.split_segments): real dev-log text,
damaged the way bench/mutate.py damages it, must read as the original."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.signals import LogLine, Where
from doctor.sources.logtext import split_segments
from doctor.sources.reflow import (
    BRACKET,
    COMPOSE,
    HOST_LABEL,
    cut_exception,
    labelled,
    needs_reflow,
    reflowed,
    wrap_width,
)
from doctor.sources.traceback import TracebackTracker

ROOT = Path(__file__).resolve().parent.parent
DEVLOGS = ROOT / "fixtures" / "devlogs"


def _wrap(text: str, width: int) -> str:
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def _case_copy(tmp_path: Path, case: str, text: str) -> Path:
    d = tmp_path / case
    d.mkdir()
    (d / "log.txt").write_text(text, encoding="utf-8")
    if (DEVLOGS / case / "command.txt").is_file():
        shutil.copy(DEVLOGS / case / "command.txt", d / "command.txt")
    return d


@pytest.mark.parametrize("case,width", [
    ("033-rl-swarm-grpo-batch-1x1-not-divisible-8", 90),     # the divisibility message broken before its numbers
    ("048-trl-ci-grpo-vlm-unexpected-kwarg-mm-token-type-ids", 100),
    ("020-openmanus-grpo-batch-1x1-numgen8-plain-traceback", 120),
])
def test_a_hard_wrapped_paste_reads_as_the_original(case, width, tmp_path):
    text = (DEVLOGS / case / "log.txt").read_text(encoding="utf-8")
    wrapped = _wrap(text, width)
    assert wrapped != text
    assert wrap_width([ln.encode() for ln in wrapped.split("\n")]) == width
    before = analyze([str(DEVLOGS / case)]).findings[0]
    after = analyze([str(_case_copy(tmp_path, case, wrapped))]).findings[0]
    assert (after.category, after.rule_id) == (before.category, before.rule_id)
    # the evidence points at the physical line of the wrapped paste where the quoted line starts
    lines = wrapped.split("\n")
    for ev in after.evidence:
        if ev.line:
            assert ev.text[:40].strip() in lines[ev.line - 1] or lines[ev.line - 1].strip() in ev.text


def test_reflowed_keeps_first_line_numbers_and_joins_only_at_the_width():
    data = b"short\n" + b"a" * 70 + b"\n" + b"bcd\n" + b"c" * 70 + b"\n" + b"x" * 70 + b"\n" + b"tail\n" + b"\n" + \
        b"[rank0]: next\n"
    got = list(reflowed(data, 0, 70))
    assert got == [(1, b"short"), (2, b"a" * 70 + b"bcd"), (4, b"c" * 70 + b"x" * 70 + b"tail"), (7, b""),
                   (8, b"[rank0]: next")]


def test_common_indentation_is_removed_and_mixed_indentation_is_kept():
    assert needs_reflow(b"    a\n      b\n    c\n") == (4, None)
    assert list(reflowed(b"    a\n      b\n\n    c\n", 4, None)) == [(1, b"a"), (2, b"  b"), (3, b""), (4, b"c")]
    assert needs_reflow(b"\ta\n    b\n") is None  # a tab on one line, spaces on another: not one paste's indent
    assert needs_reflow(b"a\n  b\n") is None


@pytest.mark.parametrize("name", ["table-07-h100-single-load-590.txt", "dmon-01-h100-load-590.txt",
                                  "csvapps-05-rtxpro6000x4-noheader-nounits-shared-pid-595.txt"])
def test_tables_of_one_width_are_not_wraps(name):
    data = (ROOT / "fixtures" / "gpu" / name).read_bytes()
    plan = needs_reflow(data)
    assert plan is None or plan[1] is None


def test_repeated_long_lines_with_timestamps_are_not_wraps():
    log = (ROOT / "fixtures" / "logs" / "edge-deepspeed-fp16-loss-scale-min" / "log.txt").read_bytes()
    assert wrap_width(log.split(b"\n")) is None


def test_copies_of_one_line_followed_by_different_remarks_are_not_wraps():
    """trl's retry line twice (fixtures/devlogs6/625), a person's remark after each: a wrap of one line at one column
    would leave the same remainder after each copy; copies followed by copies of one remainder are still a wrap."""
    loop = b"INFO:trl.extras.vllm_client:Server is not up yet. Retrying in 2.0 seconds..."
    remarks = [loop, b"It worked yesterday with the same script.", loop, "\u62a5\u9519\u4fe1\u606f\u5982\u4e0b".encode()]
    assert wrap_width(remarks) is None
    cut = [loop, b"seconds and more", loop, b"seconds and more"]
    assert wrap_width(cut) == len(loop)


def _feed(lines: list[str]):
    tr = TracebackTracker()
    out = []
    for i, text in enumerate(lines, 1):
        exc = tr.feed(LogLine(text, text, Where("log.txt", i), None, i))
        if exc is not None:
            out.append(exc)
    return out


def test_an_exception_glued_onto_its_raise_line_ends_the_traceback():
    # dev-log 050's last frame and exception, the newline between them lost
    got = _feed(['Traceback (most recent call last):',
                 '  File "/root/rl-swarm/genrl/trainer/grpo_trainer.py", line 211, in __init__',
                 "    self.top_p = config.top_p(AttributeError: 'GRPOConfig' object has no attribute 'top_p'"])
    assert len(got) == 1
    assert got[0].type == "AttributeError"
    assert got[0].message == "'GRPOConfig' object has no attribute 'top_p'"
    assert got[0].frames[-1].func == "__init__"


def test_a_code_line_that_names_an_exception_is_not_an_exception():
    got = _feed(['Traceback (most recent call last):',
                 '  File "x.py", line 3, in f',
                 '    raise ValueError(f"bad {x}")',
                 'ValueError: bad 3'])
    assert [(e.type, e.message, e.frames[-1].code) for e in got] == [("ValueError", "bad 3",
                                                                       'raise ValueError(f"bad {x}")')]


def test_two_ranks_on_one_physical_line_are_two_segments():
    line = ("[rank0]:     return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)"
            "[rank0]: RuntimeError: Expected all tensors to be on the same device")
    assert split_segments(line) == [
        "[rank0]:     return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)",
        "[rank0]: RuntimeError: Expected all tensors to be on the same device"]
    assert split_segments("[rank0]: text mentions [rank1] without a colon") == [
        "[rank0]: text mentions [rank1] without a colon"]
    # a launcher's label and its one space before the rank prefix (pdsh "worker-1: ", srun --label "3: "): split
    # even where too few lines carry the label for the paste reader to take it off every line
    assert split_segments("worker-1: [rank0]: ValueError: bad batch")[-1] == "[rank0]: ValueError: bad batch"
    assert split_segments("3: [rank2]: Traceback (most recent call last):")[-1] == \
        "[rank2]: Traceback (most recent call last):"
    # a log viewer's "host >> " prefix is not a line of its own
    assert split_segments("node-a >> [rank1]: RuntimeError: y") == ["node-a >> [rank1]: RuntimeError: y"]


def test_a_ranks_traceback_joined_onto_one_line_with_single_spaces_is_split_into_its_lines():
    # a comment box joined a [rank0] traceback's lines with one space each (fixtures/devlogs16/1918, ms-swift#8289)
    line = ('> 报错： [rank0]:   File "/usr/lib/python3.10/site-packages/vllm/engine/arg_utils.py", line 1329, in '
            'create_model_config [rank0]:     return ModelConfig( [rank0]:   File "/usr/lib/python3.10/site-packages/'
            'vllm/transformers_utils/config.py", line 163, in parse [rank0]:     config = config_class.from_pretrained(')
    assert split_segments(line) == [
        "> 报错：",
        '[rank0]:   File "/usr/lib/python3.10/site-packages/vllm/engine/arg_utils.py", line 1329, in create_model_config',
        "[rank0]:     return ModelConfig(",
        '[rank0]:   File "/usr/lib/python3.10/site-packages/vllm/transformers_utils/config.py", line 163, in parse',
        "[rank0]:     config = config_class.from_pretrained("]
    # a sentence naming ranks, with no frame, stays one line
    prose = "the error shows on [rank0]: and on [rank1]: and [rank2]: only"
    assert split_segments(prose) == [prose]


def test_a_line_number_gutter_is_taken_off_and_a_numbered_table_is_not():
    # the shape of a log viewer's export (LLaMA-Factory issue paste): "[N] " before every line, N counting up
    log = (b"[80816] frame #6: clone + 0x44 (0x7f7959666a04 in /usr/lib/x86_64-linux-gnu/libc.so.6)\n[80817] \n"
           b"[80818] [rank4]:[E321 02:07:12.539400006 ProcessGroupNCCL.cpp:1709] [PG 1 Rank 4] Timeout at NCCL work: "
           b"1580\n")
    assert needs_reflow(log) == (-1, None)
    assert [ln for _, ln in reflowed(log, -1, None)][2].startswith(b"[rank4]:[E321")
    # transformers' notebook table copied from Jupyter: step numbers start the rows, not the header
    table = (b"Step | Training Loss | reward | reward_std\n-- | -- | -- | --\n1 | 0.000000 | -17.25 | 1.5\n"
             b"2 | -0.000000 | -10.5 | 1.73\n3 | 0.000000 | 0.0 | 0.0\n")
    assert needs_reflow(table) is None


def test_collector_timestamps_and_colour_codes_turned_to_text_are_prefixes():
    from doctor.sources.logtext import clean, strip_prefixes
    assert strip_prefixes("2024-06-28T06:11:52.685300953Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 "
                          "worker_base.py:145] Error executing method initialize_cache.") == (
        "Error executing method initialize_cache.", None, "LLMRayActor")
    assert strip_prefixes("[2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] EngineCore hit an exception")[0] \
        == "EngineCore hit an exception"
    assert strip_prefixes("2025-08-11 16:11:59 INFO text")[0] == "2025-08-11 16:11:59 INFO text"  # logging's own
    assert clean("ESC[36m(RayWorkerWrapper pid=37007)ESC[0m ERROR x") == "(RayWorkerWrapper pid=37007) ERROR x"
    assert clean("[36m(pid=1)[0m ok") == "(pid=1) ok"
    assert clean("[rank0]: no colour here [5 items]") == "[rank0]: no colour here [5 items]"


def test_stdin_past_the_reflow_limit_is_read_whole(tmp_path):
    """More than MAX_REFLOW bytes on a pipe: the head read for the reflow test and the rest both reach the rules."""
    import subprocess
    import sys

    from doctor.sources.reflow import MAX_REFLOW
    filler = b"[INFO:swift] step log line that says nothing in particular\n"
    n = MAX_REFLOW // len(filler) + 10
    data = filler * n + b"ValueError: generation_batch_size (12) must be divisible by num_generations (8).\n"
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", "-", "-f", "json"], input=data,
                       capture_output=True, cwd=ROOT, timeout=300)
    import json
    report = json.loads(p.stdout)
    first = report["findings"][0]
    assert first["rule_id"] == "GD101" and first["evidence"][0]["line"] == n + 1


def test_one_exception_line_cut_mid_word_is_joined_alone():
    data = (b"ValueError: The global train batch size (1 x 1) must be evenly divisible by the number of generations per prom\n"
            b"pt (8). Given the current train batch size, the valid values for the number of generations are: [].\n"
            b"\n"
            b"some other line that ends in a word\n"
            b"and goes on\n")
    assert needs_reflow(data) == (0, 0)
    got = list(reflowed(data, 0, 0))
    assert got[0] == (1, data.split(b"\n")[0] + data.split(b"\n")[1])
    assert got[1:] == [(3, b""), (4, b"some other line that ends in a word"), (5, b"and goes on")]  # not an exception


_DIV = (b"ValueError: The global train batch size (1 x 3) must be evenly divisible by the number of generations per",
        b"prompt (8). Given the current train batch size, the valid values for the number of generations are: [3].")


def test_an_exception_line_cut_between_two_words_gets_its_space_back():
    # the raise-site index's words tell a cut between words ("per" | "prompt") from one inside a word
    data = _DIV[0] + b"\n" + _DIV[1] + b"\n"
    assert needs_reflow(data) == (0, 0)
    assert [ln for _, ln in reflowed(data, 0, 0)] == [_DIV[0] + b" " + _DIV[1]]
    inside = data.replace(b"generations per\nprompt", b"genera\ntions per prompt")
    assert [ln for _, ln in reflowed(inside, 0, 0)] == [_DIV[0] + b" " + _DIV[1]]


def test_an_exception_line_word_wrapped_with_its_space_kept_is_joined(tmp_path):
    # an editor's or a browser's word wrap keeps the space it broke at
    data = (b"Traceback (most recent call last):\n"
            b'  File "/usr/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 512, in __init__\n'
            b"    raise ValueError(\n" + _DIV[0] + b" \n" + _DIV[1] + b"\n")
    assert needs_reflow(data) == (0, 0)
    assert [ln for _, ln in reflowed(data, 0, 0)][-1] == _DIV[0] + b" " + _DIV[1]
    (tmp_path / "p.log").write_bytes(data)
    first = analyze([str(tmp_path / "p.log")]).findings[0]
    assert (first.rule_id, first.category) == ("GD101", "batch-divisibility")
    # a new sentence after a line that ends in a space is not a continuation, nor is a short line
    assert needs_reflow(_DIV[0] + b" \nThe next line is a sentence of its own.\n") is None
    assert needs_reflow(b"ValueError: a short message \nthat goes on\n") is None


def test_an_exception_line_followed_by_a_frame_or_a_log_record_is_not_cut():
    assert needs_reflow(b"RuntimeError: a long message that happens to end in a word at the end of it all ok\n"
                        b'  File "x.py", line 1, in f\n') is None
    assert needs_reflow(b"RuntimeError: a long message that happens to end in a word at the end of it all ok\n"
                        b"[rank1]: next record\n") is None


def test_a_frame_line_cut_inside_its_path_is_joined():
    data = (b'File "/root/miniconda3/envs/r1v/lib/python3.11/site-packages/vllm/model_executor/mod\n'
            b'els/utils.py", line 371, in _merge_multimodal_embeddings\n'
            b"(EngineCore_0 pid=12) ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got\n"
            b" version: (4, 5)\n")
    assert needs_reflow(data) == (0, 0)
    got = [ln for _, ln in reflowed(data, 0, 0)]
    assert got == [b'File "/root/miniconda3/envs/r1v/lib/python3.11/site-packages/vllm/model_executor/models/utils.py", '
                   b'line 371, in _merge_multimodal_embeddings',
                   b"(EngineCore_0 pid=12) ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. "
                   b"Got version: (4, 5)"]


# ---- a label in front of every line: DeepSpeed's pdsh runner, srun --label, docker compose ----

def test_a_launchers_label_is_taken_off_every_line():
    # pdsh (DeepSpeed's multinode runner) writes "host: " before each line of the remote process; two hosts here
    log = (b"worker-0: Traceback (most recent call last):\n"
           b'worker-0:   File "/opt/train.py", line 9, in <module>\n'
           b"worker-0:     trainer.train()\n"
           b"worker-1: [rank8]:[W ProcessGroupNCCL.cpp:1] warning\n"
           b"worker-0: ValueError: bad value\n")
    assert needs_reflow(log) == (HOST_LABEL, None)
    lines = [ln for _, ln in reflowed(log, HOST_LABEL, None)]
    assert lines[1] == b'  File "/opt/train.py", line 9, in <module>'  # the process's own indentation stays
    assert lines[3].startswith(b"[rank8]:") and lines[4] == b"ValueError: bad value"
    # srun --label: the task number; docker compose: the service, padded, then "| "
    assert needs_reflow(b"0: a\n1: b\n0: c\n1: d\n") == (HOST_LABEL, None)
    compose = b"trainer-1  | x = 1\ntrainer-1  | ValueError: bad\nrollout-1  | INFO started\n"
    assert needs_reflow(compose) == (COMPOSE, None)
    assert [ln for _, ln in reflowed(compose, COMPOSE, None)] == [b"x = 1", b"ValueError: bad", b"INFO started"]
    # two lines are enough when both carry the same label
    assert needs_reflow(b"worker-3: ValueError: No available memory\nworker-3: [rank0]: x\n") == (HOST_LABEL, None)


def test_a_labelled_traceback_below_unlabelled_prose_loses_only_its_label():
    # pdsh labels only the remote processes' lines: a paste whose title and prose carry none (the shape of
    # fixtures/devlogs56 5912, a multi-node LLaMA-Factory fork)
    log = (b"Support for newer transformers, please\n"
           b"### Reproduction\n"
           b"Note: it fails on every node\n"
           b"grpo_02: Traceback (most recent call last):\n"
           b'grpo_02:   File "/w/src/llamafactory/hparams/parser.py", line 44, in <module>\n'
           b"grpo_02:     check_dependencies()\n"
           b'grpo_02:   File "/w/src/llamafactory/extras/misc.py", line 83, in check_dependencies\n'
           b'grpo_02:     require_version("transformers>=4.41.2,<=4.46.1")\n')
    assert labelled(log.split(b"\n")) == 0  # under a tenth of the lines is unlabelled: not every line's label
    plan = needs_reflow(log)
    assert plan == (HOST_LABEL, None, b"grpo_02")
    lines = [ln for _, ln in reflowed(log, *plan)]
    assert lines[2] == b"Note: it fails on every node"  # a person's "Note: " stays
    assert lines[3] == b"Traceback (most recent call last):" and lines[5] == b"    check_dependencies()"
    # a log level or an exception type in front of the header is the program's own word, and one labelled line is
    # no launcher's
    assert needs_reflow(b"ERROR: Traceback (most recent call last):\nERROR:   File \"a.py\", line 1, in f\n"
                        b"ERROR:     f()\nx\ny\nz\nw\nv\nu\nt\ns\n") is None
    assert needs_reflow(b"a\nb\nhost1: Traceback (most recent call last):\n  File \"a.py\", line 1\n") is None


def test_a_complete_exception_line_is_not_joined_with_the_sentence_under_it():
    # torch prints "CUDA kernel errors might be asynchronously reported ..." under every CUDA error (vllm-project/vllm
    # #1936): the exception line ends in a whole word, the next line opens a sentence of its own
    log = (b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
           b"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below\n")
    assert not cut_exception(*log.split(b"\n")[:2])
    # a message cut inside a word still joins
    assert cut_exception(b"ValueError: The global train batch size (4 x 1) must be evenly divis",
                         b"ible by the number of generations per prompt (8).")
    # devlogs40 4322: a person's sentence in Chinese under torch's English message, then the command they ran
    line = b"[rank0]: TypeError: output tensor must have the same type as input tensor"
    assert not cut_exception(line, "SFT参数配置与官方的区别是attn_impl由flash_attn改成了flash_attention_3 ".encode())
    assert not cut_exception(b"ValueError: the value of --max_length is not one the model accepts here ",
                             b"swift sft \\")


def test_a_job_runners_bracketed_status_is_taken_off_every_line():
    # a runner that tags each line with its stream, the elapsed time and the GPU it holds: the numbers change on
    # every line, the shape does not
    log = (b"[err, 2:16, 162s, g3115] Traceback (most recent call last):\n"
           b'[err, 2:16, 162s, g3115]   File "/opt/train.py", line 9, in <module>\n'
           b"[out, 2:17, 163s, g3115] step 3 done\n"
           b"[err, 2:17, 164s, g3115] ValueError: bad value\n")
    assert needs_reflow(log) == (BRACKET, None)
    lines = [ln for _, ln in reflowed(log, BRACKET, None)]
    assert lines == [b"Traceback (most recent call last):", b'  File "/opt/train.py", line 9, in <module>',
                     b"step 3 done", b"ValueError: bad value"]
    # a logger's own tag is the program's words (rules read "[INFO:swift]"), and a bracketed timestamp holds the
    # times hang rules measure: neither is taken off
    swift = b"[INFO:swift] Start training\n[INFO:swift] args: x\n[WARNING:swift] y\n[INFO:swift] z\n"
    assert labelled(swift.split(b"\n")) == 0
    stamped = b"[2025-03-10 15:07:20] a\n[2025-03-10 15:07:21] b\n[2025-03-10 15:07:29] c\n"
    assert labelled(stamped.split(b"\n")) == 0
    ranks = b"[rank0]: Traceback\n[rank1]: Traceback\n[rank0]: ValueError: x\n[rank1]: ValueError: x\n"
    assert labelled(ranks.split(b"\n")) == 0


def test_the_programs_own_words_are_not_a_label():
    config = b"model: Qwen/Qwen2.5-7B\nlr: 1e-6\nnum_generations: 8\nbeta: 0.04\nmax_steps: 100\n"
    assert labelled(config.split(b"\n")) == 0  # a pasted config: a different key on every line
    # a listing typed as "name: size", one line per checkpoint: each "label" once
    listing = b"checkpoint-100: 15.2 GB\ncheckpoint-200: 30.4 GB\ncheckpoint-300: 43.1 GB\n"
    assert labelled(listing.split(b"\n")) == 0
    table = b"reward      | 0.0\nreward_std  | 0.0\nkl          | 0.01\nloss        | 0.0\n"
    assert labelled(table.split(b"\n")) == 0
    every_rank = b"ValueError: x\nValueError: x\nValueError: x\nRuntimeError: y\n"
    assert labelled(every_rank.split(b"\n")) == 0  # the exception every rank printed, not a label
    uvicorn = b"INFO:     127.0.0.1:5 - GET /health\nINFO:     started\nINFO:     waiting\n"
    assert labelled(uvicorn.split(b"\n")) == 0
    assert labelled([b"worker-3: RuntimeError: CUDA error"]) == 0  # one line: no way to tell
    assert labelled([b"worker-3: a", b"worker-4: b"]) == 0  # two lines, two labels
    # a level a program writes before every message ("Error: ", "Warning: "), not a host called Error
    errors = b"Error: No available node types\nError: No available node types\nError: No available node types\n"
    assert labelled(errors.split(b"\n")) == 0


@pytest.mark.parametrize("case", ["020-openmanus-grpo-batch-1x1-numgen8-plain-traceback",
                                  "061-open-r1-accuracy-reward-missing-solution-7gpu",
                                  "019-trl-qwen3-06b-20gb-gpu-oom-in-compute-loss"])
def test_a_labelled_paste_reads_as_the_original(case, tmp_path):
    text = (DEVLOGS / case / "log.txt").read_text(encoding="utf-8")
    before = analyze([str(_case_copy(tmp_path, case, text))]).findings[0]
    labelled_text = "".join(f"worker-{i % 2}: {ln}" if ln.strip() else ln for i, ln in enumerate(text.splitlines(True)))
    (tmp_path / "b").mkdir()
    after = analyze([str(_case_copy(tmp_path / "b", case, labelled_text))]).findings[0]
    assert (after.rule_id, after.category) == (before.rule_id, before.category)
    assert after.evidence[0].line == before.evidence[0].line  # evidence points at the paste's own line


def test_a_timestamped_traceback_reads_as_the_original(tmp_path):
    # rl-swarm's reward function failing (fixtures/devlogs3/212), as `kubectl logs --timestamps` shows it
    case = next(p for p in (ROOT / "fixtures" / "devlogs3").iterdir() if p.name.startswith("212-"))
    text = (case / "log.txt").read_text(encoding="utf-8")
    stamped = "".join(f"2025-05-19T02:15:{i % 60:02d}.348645373Z {ln}" for i, ln in enumerate(text.splitlines(True)))
    (tmp_path / "log.txt").write_text(stamped, encoding="utf-8")
    assert analyze([str(case)]).findings[0].rule_id == "GD606"
    assert analyze([str(tmp_path)]).findings[0].rule_id == "GD606"


def test_a_bare_raise_and_a_padded_rank_line_with_their_exception_glued_on():
    # `raise NotImplementedError` (no message) with the exception line glued on: the type twice in one word
    assert split_segments("    raise NotImplementedErrorNotImplementedError") == [
        "    raise NotImplementedError", "NotImplementedError"]
    assert split_segments("    raise ValueErrorValueError: bad") == ["    raise ValueError", "ValueError: bad"]
    assert split_segments("    raise ValueError") == ["    raise ValueError"]
    # a terminal pads its lines with spaces: the next rank's line glued after the padding
    assert split_segments("[rank0]:     value = self.data[key]          [rank0]: KeyError: 'messages' ") == [
        "[rank0]:     value = self.data[key]", "[rank0]: KeyError: 'messages' "]


def test_an_exception_cut_mid_word_behind_nested_prefixes():
    # a collector's timestamp before Ray's worker prefix (a Ray job's log read with kubectl logs --timestamps)
    from doctor.sources.reflow import cut_exception
    line = (b"2025-05-22T02:51:37.050655660Z (EngineCore pid=316) ValueError: To serve at least one request with the "
            b"model's max seq len (100000), (4.26 GiB KV cach")
    assert cut_exception(line, b"e is needed, which is larger than the available KV cache memory (4.25 GiB).")


def test_wraps_a_terminal_makes_inside_numbers_frames_and_repeated_lines():
    # an address cut inside its number (torch's DistNetworkError message): joined when the next line goes on in digits
    exc = (b"torch.distributed.DistNetworkError: The client socket has timed out after 300000ms while trying to "
           b"connect to (12\n7.0.0.1, 51216).\n")
    plan = needs_reflow(exc)
    assert plan is not None
    assert [ln for _, ln in reflowed(exc, *plan)][0].endswith(b"connect to (127.0.0.1, 51216).")
    assert needs_reflow(b"ValueError: local_world_size is not what the launcher expected at all: 3\nnext line\n") is None
    # a frame line cut after its line number, the function on the next line
    frame = (b'  File "/usr/local/lib/python3.11/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py", line 755,\n'
             b" in done\n    current_queue.put(x)\n")
    plan = needs_reflow(frame)
    assert plan is not None
    assert [ln for _, ln in reflowed(frame, *plan)][0].endswith(b'grpo_trainer.py", line 755, in done')
    # the same warning wrapped the same way each time it was printed: each copy goes on in its own remainder
    warn = (b"WARNING 03-30 00:24:16 [_logger.py:72] Input prompt (8128 tokens) is too long and exceeds l\n"
            b"imit of 6000\n") * 4
    assert needs_reflow(warn) == (0, 91)
    assert needs_reflow(b"WARNING 03-30 00:24:16 [_logger.py:72] the same long warning printed again and again x\n" * 4) is None


def test_a_rich_traceback_box_is_not_a_wrap_and_the_exception_under_it_stays_its_own_line():
    """Rows of rich's box all have the box's width and end in a box-drawing character: not lines a terminal cut.
    The exception line under the box opens a record of its own and is never joined to the line above."""
    bar = "─" * 96
    rows = [f"╭{bar}╮".encode()] + [
        f"│ {text:<94} │".encode() for text in (
            "/usr/lib/python3.10/site-packages/deepspeed/runtime/config.py:881 in _batch_assertion",
            "  878 │   │",
            "  879 │   │   assert (train_batch > 0), f\"Train batch size: {train_batch} has to be greater th",
            "❱ 881 │   │   assert (micro_batch > 0), f\"Micro batch size per gpu: {micro_batch} has to be gr",
            "  883 │   │   assert (grad_acc > 0), f\"Gradient accumulation steps: {grad_acc} has to be great")] + [
        f"╰{bar}╯".encode(), b"AssertionError: Micro batch size per gpu: 0 has to be greater than 0"]
    assert wrap_width(rows) is None
    data = b"\n".join(rows) + b"\n"
    plan = needs_reflow(data)
    lines = [ln for _, ln in reflowed(data, *plan)] if plan else data.split(b"\n")
    assert b"AssertionError: Micro batch size per gpu: 0 has to be greater than 0" in [ln.strip() for ln in lines]


def test_a_whole_exception_line_before_a_sentence_that_opens_with_a_one_letter_word():
    # fixtures/devlogs33/3606: an issue's title is the whole exception line, the body opens with "I am ..."
    assert not cut_exception(b"RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
                             b"directory", b"I am new to OLMo and I want to retrain several checkpoints.")
    assert not cut_exception(b"ValueError: the tokenizer of this checkpoint has no chat template at all",
                             b"A run with another model works.")
