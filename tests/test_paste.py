"""Text as people paste it (issue 15 point 3): quote prefixes, markdown table rows, log-viewer timestamps, bold
exception lines, HTML wrappers and elisions are removed before rules and the traceback parser see a line; the raw
line (and its number) stays the evidence.

Lines are from real logs in fixtures/devlogs (066: a web log viewer copied as a markdown table; 069: every line
quoted with "> "; 070: the exception line in markdown bold); the HTML and elision shapes are GitHub issue-form
conventions (invented here, said so).
"""
from __future__ import annotations

from pathlib import Path

from doctor.analyze import analyze
from doctor.sources.logtext import segments
from doctor.sources.paste import needs_unwrap, unwrap

DEVLOGS = Path(__file__).resolve().parent.parent / "fixtures" / "devlogs"


def test_table_row_and_viewer_prefix_give_rank_and_code():  # 066 lines 1-4
    frame = segments(b'File "/usr/local/lib/python3.10/dist-packages/vllm/lora/ops/triton_ops/lora_shrink_op.py", '
                     b'line 149, in _lora_shrink |  ')[0]
    assert frame[0].endswith("in _lora_shrink")
    assert segments(b"-- | --")[0][0] == ""
    body, raw, rank, _ = segments(b"  |   | 2025-11-19 18:38:40.880777 master-0 >> [rank1]: AssertionError")[0]
    assert (body, rank) == ("AssertionError", 1)
    assert raw.startswith("|") and "master-0" in raw  # evidence keeps the line as pasted


def test_a_bar_separated_record_is_not_a_table_row():
    # Megatron-LM's iteration line (megatron/training/training.py training_log; ms-swift's Megatron trainers print
    # the same) ends in " |": its bars separate its fields and must stay for the metric reader (devlogs3 211)
    line = (" [2025-11-25 07:19:22] iteration        7/    2174 | elapsed time per iteration (ms): 215613.0 | "
            "reward: 7.617188E-01 | completions/mean_length: 4.041312E+03 | grad norm: 0.016 |")
    assert unwrap(line) == line
    assert segments(line.encode())[0][0].count("|") == 5
    # a table row starts with its bar: its cells are joined
    assert unwrap("| ValueError: x | 12 |") == "ValueError: x 12"


def test_rays_event_prefix_is_taken_off():
    # ray/_private/worker.py shows the autoscaler's and scheduler's events with the component and the time since the
    # job started, the raylet's warnings with "(raylet)"
    body, _, _, origin = segments(b"(autoscaler +8m46s) Error: No available node types can fulfill resource request")[0]
    assert body.startswith("Error: No available") and origin == "ray"
    assert segments(b"(scheduler +2m2s) Warning: The following resource request cannot be scheduled right now: "
                    b"{'CPU': 1.0}.")[0][0].startswith("Warning: The following")
    assert segments(b"(raylet) There are tasks with infeasible resource requests")[0][0].startswith("There are")


def test_a_redirected_streams_logger_prefix_is_taken_off_also_inside_a_workers_prefix():
    # FastChat's build_logger format ("time | LEVEL | name | message", stderr redirected to a logger named "stderr")
    # around Ray's worker prefix around the same format again (hiyouga/EasyR1#428, a line as posted)
    line = (b"2025-07-17 17:00:39 | ERROR | stderr | (pid=41424) 2025-07-17 17:00:39 | ERROR | stderr |   File "
            b'"/x/EasyR1/verl/workers/fsdp_workers.py", line 384, in init_model')
    body, _, _, origin = segments(line)[0]
    assert body == '  File "/x/EasyR1/verl/workers/fsdp_workers.py", line 384, in init_model' and origin == "ray"
    assert unwrap("2025-07-17 17:00:39 | INFO | stdout | step 3 done") == "step 3 done"


def test_quote_and_bold_wrappers():  # 069 line 8, 070 line 2
    assert segments(b"> OutOfMemoryError                          Traceback (most recent call last)")[0][0] \
        .startswith("OutOfMemoryError")
    body, _, rank, _ = segments(b"[rank1]: **RuntimeError: world_size (8) is not equal to tensor_model_parallel_size "
                                b"(4) x pipeline_model_parallel_size (1)**")[0]
    assert rank == 1 and body.startswith("RuntimeError: world_size (8)") and not body.endswith("*")


def test_html_and_elisions_and_ordinary_lines_untouched():
    assert unwrap("<details><summary>Traceback</summary>") == "Traceback"
    assert unwrap("[... 8 similar lines ...]") == ""
    assert unwrap("...") == ""
    for line in ("  File \"a.py\", line 3, in f", "    [1, 2]", ">>> import torch",
                 "100%|##########| 3/3 [00:01<00:00,  2.1it/s]", "{'loss': 0.1, 'grad_norm': 1.2}"):
        assert segments(line.encode())[0][0] == line
    assert not needs_unwrap("INFO 11-01 23:47:29 [gpu_worker.py:391] Free memory")


def test_bold_exception_070_is_no_longer_silent():
    rep = analyze([str(next(DEVLOGS.glob("070-*")))])
    assert rep.findings and any(e.line == 2 for f in rep.findings for e in f.evidence)


def test_html_character_entities_of_a_log_copied_from_a_web_page_are_undone():
    line = '  File &quot;/home/t/.local/lib/python3.10/site-packages/vllm/engine/llm_engine.py&quot;, line 2010, in f'
    assert needs_unwrap(line)
    assert unwrap(line) == 'File "/home/t/.local/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 2010, in f'
    assert unwrap("KeyError: &#39;solution&#39;") == "KeyError: 'solution'"
    assert not needs_unwrap("loss & reward improved; ok")  # a bare ampersand is text


def test_frames_behind_entities_are_read_as_frames(tmp_path):
    log = tmp_path / "paste.txt"
    log.write_text('Traceback (most recent call last):\n'
                   '  File &quot;/x/site-packages/vllm/engine/llm_engine.py&quot;, line 2010, in _validate_model_input\n'
                   '    raise ValueError(\n'
                   'ValueError: The decoder prompt (length 17772) is longer than the maximum model length of 16384.\n')
    f = analyze([str(log)]).findings[0]
    assert f.rule_id == "GD416" and "17772 tokens, more than its max_model_len 16384" in f.message


def test_log_viewer_source_column_and_ray_repeat_suffix_are_not_part_of_the_line(tmp_path):
    line = ("2025-02-22 12:25:22 | orz-master-0/pytorch | (LLMActor pid=619, ip=10.42.4.232)  Loading safetensors "
            "checkpoint shards:  71% Completed | 12/17 [01:21<00:36,  7.20s/it] [repeated 15x across cluster]")
    assert unwrap(line).startswith("(LLMActor pid=619")
    assert "repeated" not in segments(b"(w pid=1) ValueError: x [repeated 7x across cluster]")[0][0]
    log = tmp_path / "paste.txt"
    log.write_text(line + "\n")
    assert analyze([str(log)]).findings[0].rule_id == "GD323"


def test_one_exception_line_written_by_two_processes_at_once_is_read_once(tmp_path):
    line = "AssertionErrorAssertionError: : can only test a child processcan only test a child process"
    assert unwrap(line) == "AssertionError: can only test a child process"
    assert unwrap("ValueErrorValueError: : ab") == "ValueError: ab"  # two different messages: both kept
    log = tmp_path / "paste.txt"
    log.write_text("Traceback (most recent call last):\n"
                   '  File "/opt/conda/lib/python3.10/multiprocessing/process.py", line 160, in is_alive\n'
                   "    assert self._parent_pid == os.getpid(), 'can only test a child process'\n" + line + "\n")
    rep = analyze([str(log)])
    assert rep.findings and "can only test a child process" in rep.findings[0].message
