"""Hostile log text: every quirk of real logs is read into the right clean lines."""
from __future__ import annotations

import io

from doctor.sources.logtext import LineReader, decode, physical_lines, split_segments, strip_prefixes


def lines_of(data: bytes):
    return list(LineReader("t.log", [0]).lines(io.BytesIO(data)))


def test_ansi_and_rank_prefix_removed():
    [ln] = lines_of(b"[rank3]: \x1b[31mValueError: boom\x1b[0m\n")
    assert ln.text == "ValueError: boom"
    assert ln.rank == 3
    assert ln.where.line == 1


def test_tqdm_redraws_and_glued_message_split():
    data = (b"Train:   0%|          | 0/6 [00:00<?, ?it/s]\rTrain:  17%|#         | 1/6 [00:01<00:05,  1.00it/s]"
            b"[INFO:swift] Saving model checkpoint to /x/checkpoint-1\n")
    texts = [l.text for l in lines_of(data)]
    assert texts == ["Train:   0%|          | 0/6 [00:00<?, ?it/s]",
                     "Train:  17%|#         | 1/6 [00:01<00:05,  1.00it/s]",
                     "[INFO:swift] Saving model checkpoint to /x/checkpoint-1"]
    assert {l.where.line for l in lines_of(data)} == {1}


def test_metrics_dict_after_bar_padding_is_its_own_line():
    data = b"Train:  83%|########  | 5/6 [00:00<00:00,  7.61it/s]            {'loss': '0', 'grad_norm': '0'}\n"
    assert [l.text for l in lines_of(data)][-1] == "{'loss': '0', 'grad_norm': '0'}"


def test_vllm_prefixes():
    text, rank, origin = strip_prefixes("ERROR 09-20 19:54:33 [core.py:398] torch.OutOfMemoryError: CUDA out of memory.")
    assert text.startswith("torch.OutOfMemoryError") and origin == "vllm" and rank is None
    text, rank, origin = strip_prefixes("(VllmWorker rank=2 pid=12345) ERROR 01-02 03:04:05 [x.py:1] boom")
    assert (text, rank, origin) == ("boom", 2, "VllmWorker")


def test_markdown_fence_and_backticks():
    texts = [l.text for l in lines_of(b"```\n`ValueError: x`\n```python\n")]
    assert texts == ["ValueError: x"]


def test_decoding_gbk_broken_utf8_and_nul():
    assert decode("显存不足".encode("gbk")) == "显存不足"
    assert decode(b"ok\xff\xfe") == "ok\ufffd\ufffd"  # neither UTF-8 nor GB18030: replacement characters
    assert decode(b"Val\x00ueError") == "ValueError"


def test_crlf_line_endings():
    texts = [l.text for l in lines_of(b"a line\r\nValueError: x\r\n")]
    assert texts == ["a line", "ValueError: x"]


def test_huge_line_is_capped_and_next_line_kept():
    big = b"x" * (5 * 1024 * 1024)
    got = list(physical_lines(io.BytesIO(big + b"\nafter\n"), max_line=1000))
    assert [n for n, _ in got] == [1, 2]
    assert len(got[0][1]) == 1000 and got[1][1] == b"after"


def test_truncated_last_line_without_newline():
    got = list(physical_lines(io.BytesIO(b"one\ntwo")))
    assert got == [(1, b"one"), (2, b"two")]


def test_split_segments_keeps_plain_lines():
    assert split_segments("plain text") == ["plain text"]
    assert split_segments("") == [""]


def test_a_traceback_printed_as_a_python_list_is_read_as_its_lines():
    # traceback.format_exception's list printed whole (Megatron-Core logs a failed step so; devlogs9 1021)
    line = ("['Traceback (most recent call last):\\n', '  File \"/a/trainer.py\", line 141, in forward_step\\n"
            "    data = self.get_batch(it)\\n', \"TypeError: 'NoneType' object is not an iterator\\n\"]")
    assert split_segments(line) == ["Traceback (most recent call last):",
                                    '  File "/a/trainer.py", line 141, in forward_step',
                                    "    data = self.get_batch(it)",
                                    "TypeError: 'NoneType' object is not an iterator"]
    # cut inside its third item: the whole items before the cut
    assert split_segments(line[:line.index("not an iterator")]) == ["Traceback (most recent call last):",
                                                             '  File "/a/trainer.py", line 141, in forward_step',
                                                             "    data = self.get_batch(it)"]
    # a message that only quotes the header is left as it is
    assert split_segments("said ['Traceback (most recent call last):\\n'") == [
        "said ['Traceback (most recent call last):\\n'"]


def test_a_ray_prefix_keeps_the_indentation_of_the_line_it_carries():
    # verl prints its driver's traceback through Ray: "(main_task pid=N) " then the line as the process wrote it; the
    # code line under a frame is told from other text by its indentation (fixtures/devlogs2/117)
    from doctor.engine import Session
    from doctor.registry import load_catalog
    text = ("Traceback (most recent call last):\n"
            '(main_task pid=1234)   File "/x/verl/trainer/ppo/ray_trainer.py", line 500, in fit\n'
            "(main_task pid=1234)     assert real_train_batch_size % n_gpus == 0\n"
            "(main_task pid=1234) AssertionError\n")
    s = Session(load_catalog())
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    first = s.finish()[0]
    assert (first.rule_id, first.category) == ("GD996", "batch-divisibility")
    assert "in verl" in first.title  # a checkout's verl/trainer/ is verl's code, not the user's


def test_clean_removes_a_terminal_title_sequence_whole():
    # OSC sequences (a terminal title set by a launcher) go with their text, not only their escape byte; a second,
    # narrower _ANSI defined later in the module (for notebook tracebacks) once replaced the one clean() reads
    from doctor.sources.logtext import clean
    assert clean("\x1b]0;train\x07step 1") == "step 1"
    assert clean("\x1b[1;31mError\x1b[0m") == "Error"
    # the escape byte decoded as U+FFFD by a paste (a vLLM worker's colour, fixtures/devlogs25/3121)
    assert clean("\ufffd[1;36m(VllmWorker rank=3 pid=4867)\ufffd[0;0m ERROR 07-26 18:47:24 [multiproc_executor.py:511] x") \
        == "(VllmWorker rank=3 pid=4867) ERROR 07-26 18:47:24 [multiproc_executor.py:511] x"


def test_a_collectors_timestamp_leaves_the_lines_own_indentation():
    # kubectl logs --timestamps / docker logs -t: one space after the stamp, then the process's line as printed
    data = (b"2025-05-19T02:15:51.111457612Z Traceback (most recent call last):\n"
            b'2025-05-19T02:15:51.348645373Z   File "/root/x/stage3_rewards.py", line 245, in final_correctness_reward_func\n'
            b"2025-05-19T02:15:51.348645373Z     1.0 * weighting if r == a else 0.0 for r, a in zip(responses, answer)\n"
            b"2025-05-19T02:15:54.589221185Z TypeError: 'NoneType' object is not iterable\n")
    texts = [ln.text for ln in lines_of(data)]
    assert texts[1] == '  File "/root/x/stage3_rewards.py", line 245, in final_correctness_reward_func'
    assert texts[2].startswith("    1.0 * weighting")
    assert texts[3] == "TypeError: 'NoneType' object is not iterable"


def test_utf8_read_as_windows_1252_is_put_back():
    # a browser or editor that read a UTF-8 log as Windows-1252 and copied it: rich's box borders become "â”‚"
    line = "│ ValueError: x │"
    mangled = line.encode("utf-8").decode("cp1252").encode("utf-8")
    assert decode(mangled) == line
    assert decode("l'âge du modèle".encode()) == "l'âge du modèle"  # real accents stay
    # "━" (E2 94 81) has a byte Windows-1252 leaves out: the bars and the words come back, the lost byte is U+FFFD
    ruled = "┡━━╇━━┩ │ step │".encode().decode("cp1252", errors="ignore").encode("utf-8")
    back = decode(ruled)
    assert back.startswith("┡") and "╇" in back and back.endswith("│ step │") and "\ufffd" in back


def test_an_exception_inside_a_sentence_becomes_a_line_of_its_own():
    # glued to Chinese prose (dev11 1309), quoted in English prose (dev11 1314)
    assert split_segments("我运行时出现这个错误ModuleNotFoundError: No module named 'x.y'，请问是什么问题？") == [
        "我运行时出现这个错误", "ModuleNotFoundError: No module named 'x.y'", "，请问是什么问题？"]
    assert split_segments('errors such as "omegaconf.errors.ConfigAttributeError: Key \'k\' is not in struct." Many') == [
        "errors such as ", "omegaconf.errors.ConfigAttributeError: Key 'k' is not in struct.", " Many"]
    # an exception line's own message, and a frame, are left whole whatever they quote
    assert split_segments('ValueError: 数据集错误 "KeyError: x"') == ['ValueError: 数据集错误 "KeyError: x"']
    assert split_segments('[rank0]: RuntimeError: 出错了') == ['[rank0]: RuntimeError: 出错了']


def test_a_quoted_exception_line_and_a_typeless_message_after_a_chinese_colon():
    # dev13 1514 (the exception line pasted in double quotes), 1504 (torch's typeless wording after "报错：")
    line = '"ValueError: The model\'s max seq len (131072) is larger than the KV cache (39024). Try `x`."'
    assert split_segments(line) == [line[1:-1]]
    assert split_segments("执行的时候，报错：Expected all tensors to be on the same device, but found at least two devices") \
        == ["执行的时候，报错：", "Expected all tensors to be on the same device, but found at least two devices"]
    # an English sentence's colon (a thread title): the message torch prints is a line of its own
    assert split_segments("PPO on multi-GPU but get Error: Expected all tensors to be on the same device") \
        == ["PPO on multi-GPU but get Error: ", "Expected all tensors to be on the same device"]
    # a colon in a frame-like or key-value line is no sentence's
    assert split_segments("device: Expected all tensors") == ["device: Expected all tensors"]
    # a Chinese sentence with a colon and no such message stays whole
    assert split_segments("训练的时候报错：显存不够") == ["训练的时候报错：显存不够"]


def test_an_exception_in_single_quotes_inside_prose_but_not_an_apostrophe_or_a_quoted_key():
    # dev14 1603: accelerate's message quoted in single quotes, with a space before the closing quote
    line = ("When i try to increase context window, I am getting error 'RuntimeError: No executable batch size "
            "found, reached zero. ' with auto_find_batch_size=True.")
    assert split_segments(line) == ["When i try to increase context window, I am getting error ",
                                    "RuntimeError: No executable batch size found, reached zero.",
                                    " with auto_find_batch_size=True."]
    assert split_segments("it says 'KeyError: 'solution'' when I run") == ["it says ", "KeyError: 'solution'",
                                                                           " when I run"]
    # an apostrophe inside a word opens nothing; an unquoted exception in an ASCII sentence stays as it was
    assert split_segments("I can't run it, don't know why") == ["I can't run it, don't know why"]
    assert split_segments("the error KeyError: 'x' happened") == ["the error KeyError: 'x' happened"]


def test_a_line_number_gutter_is_taken_off():
    # dev14 1613: `cat -n` style gutters, right-aligned digits then a tab
    assert strip_prefixes("  1216\t  File \"/x/loader.py\", line 393, in get_dataset")[0] == \
        "  File \"/x/loader.py\", line 393, in get_dataset"
    assert strip_prefixes("3\t01/21/2025 21:04:11 - INFO - loading")[0] == "01/21/2025 21:04:11 - INFO - loading"
    # a tab later in the line, or digits with no tab, are left alone
    assert strip_prefixes("step 3\tloss 0.5")[0] == "step 3\tloss 0.5"
    assert strip_prefixes("1216 File x")[0] == "1216 File x"


def test_a_traceback_header_with_its_exception_or_first_frame_glued_after_it():
    # dev14 1617 pasted damaged this way (the glue mutation of bench/mutate.py makes the same shape)
    assert split_segments("Traceback (most recent call last):AttributeError: 'Qwen3Model' object has no attribute "
                          "'model_meta'") == ["Traceback (most recent call last):",
                                              "AttributeError: 'Qwen3Model' object has no attribute 'model_meta'"]
    assert split_segments('Traceback (most recent call last):  File "/x.py", line 3, in f') == [
        "Traceback (most recent call last):", '  File "/x.py", line 3, in f']
    # prose after the header is left as it was
    assert split_segments("Traceback (most recent call last): see below") == [
        "Traceback (most recent call last): see below"]
    # a gutter after a Ray prefix is taken off as well
    assert strip_prefixes('(WorkerDict pid=42) 1216\t  File "/x.py", line 3, in f')[0] == '  File "/x.py", line 3, in f'


def test_a_bracketed_space_separated_timestamp_is_taken_off_traceback_lines_only():
    # devlogs8 827 (a verl run's console stamped "[2026-03-11 17:47:54] " on every line)
    assert strip_prefixes('[2026-03-11 17:47:54]   File "/a/b.py", line 3, in run')[0] == '  File "/a/b.py", line 3, in run'
    assert strip_prefixes("[2026-03-11 17:47:54] ray.exceptions.RayTaskError(NotImplementedError): ray::T.run()")[0] \
        == "ray.exceptions.RayTaskError(NotImplementedError): ray::T.run()"
    # a log record keeps its stamp (the hang rules read time from it)
    assert strip_prefixes("[2026-03-11 17:47:54] [INFO] step 3")[0] == "[2026-03-11 17:47:54] [INFO] step 3"


def test_a_serving_platforms_record_head_is_taken_off_the_traceback_lines_it_relogs():
    # devlogs13 1515 (vLLM's async engine under a platform logging "date level pid [file:line] ")
    head = "2024-12-19 21:40:35 ERROR 56542 [async_llm_engine.py:64] "
    assert strip_prefixes(head + '  File "/x/vllm/worker/worker_base.py", line 327, in execute_model')[0] == \
        '  File "/x/vllm/worker/worker_base.py", line 327, in execute_model'
    assert strip_prefixes(head + "Engine is gracefully shutting down")[0] == head + "Engine is gracefully shutting down"
    # devlogs42 4524: a desktop app's record of its vLLM child ("[Error] (Process)"), a process prefix after it
    app = "2026-06-09 14:01:52.982 [Error] (Process) "
    text, _, origin = strip_prefixes(app + "(EngineCore pid=42521) ERROR 06-09 14:01:52 [core.py:1136] ValueError: x")
    assert (text, origin) == ("ValueError: x", "EngineCore")
    assert strip_prefixes(app + "Starting the engine")[0] == app + "Starting the engine"
    # devlogs43 4620: Python logging's "asctime - name - level - " around vLLM's own record
    relay = "2025-08-13 04:39:39,838 - __main__ - INFO - "
    assert strip_prefixes(relay + "ERROR 08-13 04:39:39 engine.py:400]   File \"/x/vllm/worker.py\", line 3, in f")[0] \
        == '  File "/x/vllm/worker.py", line 3, in f'
    assert strip_prefixes(relay + "loading the dataset")[0] == relay + "loading the dataset"


def test_exceptions_in_issue_titles_and_sentence_tails_are_read():
    # dev16 1904 ([Bug] glued before the exception), 1920 (after a comma in a sentence), 1910 (a full-width colon)
    assert strip_prefixes("[Bug]RuntimeError: 'Qwen3Attention' object has no attribute 'apply_qkv'")[0] == \
        "RuntimeError: 'Qwen3Attention' object has no attribute 'apply_qkv'"
    assert split_segments("[Bug]: qwen3_vl.py has problem with the 8b model, KeyError: 'blocks.0.mlp.gate_proj.weight'") \
        == ["[Bug]: qwen3_vl.py has problem with the 8b model, ", "KeyError: 'blocks.0.mlp.gate_proj.weight'"]
    assert split_segments("进行DPO训练的时候，报错KeyError：None") == ["进行DPO训练的时候，报错", "KeyError: None"]
    # a code line (indented) and a logger's tag are left alone
    assert split_segments('    msg = f"oops, KeyError: {k}"') == ['    msg = f"oops, KeyError: {k}"']
    assert strip_prefixes("[INFO:swift] hello")[0] == "[INFO:swift] hello"


def test_an_exception_behind_a_line_prefix_stays_on_its_line():
    # a rank-tagged exception line behind a stamp, a quote mark or a worker label is the exception's own line (its
    # rank joins the rank's traceback), not a sentence ending in an exception
    for line in ("2025-05-10T00:00:00.123Z [rank0]: RuntimeError: boom", "> [rank0]: RuntimeError: boom",
                 "(WorkerDict pid=12) [rank1]: ValueError: x"):
        assert split_segments(line) == [line]


def test_a_datasets_bar_counts_examples_per_second_and_splits_like_any_tqdm_bar():
    line = ("Generating train split: 0 examples [00:00, ? examples/s]Failed to load JSON from file 'x.jsonl' with "
            "error <class 'pyarrow.lib.ArrowInvalid'>: bad")
    assert split_segments(line) == ["Generating train split: 0 examples [00:00, ? examples/s]",
                                    "Failed to load JSON from file 'x.jsonl' with error <class 'pyarrow.lib.ArrowInvalid'>: bad"]
    assert split_segments("Map: 100%|##| 57/57 [00:01<00:00, 45.20 examples/s]") == [
        "Map: 100%|##| 57/57 [00:01<00:00, 45.20 examples/s]"]


def test_an_exception_named_as_avoided_is_not_split_out_and_a_typeless_one_glued_to_chinese_is():
    # dev20 2525: the author skipped training on a node to avoid the error; the run's failure is the timeout
    line = "In order to avoid a `ValueError: optimizer got an empty parameter list`, I skip the training process."
    assert split_segments(line) == [line]
    assert split_segments('it fails with "ValueError: optimizer got an empty parameter list" on node 2') == [
        "it fails with ", "ValueError: optimizer got an empty parameter list", " on node 2"]
    # dev20 2513: torch's broadcast wording glued to a Chinese sentence, no colon between
    assert split_segments("在zero-stage 3下训练报错，显示The size of tensor a (0) must match the size of tensor b (24576)") \
        == ["在zero-stage 3下训练报错，显示", "The size of tensor a (0) must match the size of tensor b (24576)"]


def test_a_loggers_source_location_before_a_vllm_process_prefix_is_taken_off():
    text, rank, origin = strip_prefixes("start.py:1395 (EngineCore pid=1713) ValueError: To serve at least one request")
    assert text.startswith("ValueError: To serve") and origin == "EngineCore"
    # a source location alone (a logger's own record) is left as it is
    assert strip_prefixes("train.py:12 loss went up")[0] == "train.py:12 loss went up"


def test_compose_and_pipe_logger_prefixes_come_off():
    # fixtures/devlogs37/4025: docker compose's service prefix, then fastchat's "date | LEVEL | logger | " record head
    line = ('qanything-container-local  | 2024-02-20 21:46:23 | ERROR | stderr |   File '
            '"/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 231, in _check_if_gpu_supports_dtype')
    assert strip_prefixes(line)[0].startswith('  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py"')
    # loguru's default format, and compose v2's numbered container name
    assert strip_prefixes("2024-02-20 21:46:23.123 | ERROR    | app.main:run:42 - ValueError: bad")[0] == "ValueError: bad"
    assert strip_prefixes("trainer-1 | RuntimeError: CUDA error")[0] == "RuntimeError: CUDA error"
    # a table's first cell is not a service name
    assert strip_prefixes("loss | 0.5 | 0.4")[0] == "loss | 0.5 | 0.4"
    assert strip_prefixes("step 10 | loss 0.5 | reward 0.2")[0] == "step 10 | loss 0.5 | reward 0.2"
