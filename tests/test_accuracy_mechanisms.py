"""Issue 15: the general mechanisms added for logs nobody here has seen (each with a positive and a negative case).
The dev-log cases they came from are kept at their labels by test_devlogs.py; these tests pin the mechanisms on
text written to show the format, not on one log's words."""
from __future__ import annotations

from conftest import ROOT, run_text

from doctor.classify.hints import (
    attribute_owner,
    flags_named,
    message_hints,
    negative_budget,
    phase_of,
    vllm_memory_note,
)
from doctor.classify.parts import feature_of, part_of
from doctor.classify.wrappers import unwrap
from doctor.signals import ExceptionInfo, Frame, LogLine, Where
from doctor.sources.paste import DictJoiner

PPRINT = "{'loss': 0.0,\n 'grad_norm': 0.0,\n 'rewards/accuracy': 0.0,\n 'reward': 0.0,\n 'reward_std': 0.0,\n 'frac_reward_zero_std': 1.0,\n 'epoch': 0.1}\n"


def _ids(findings):
    return [f.rule_id for f in findings]


def test_dict_joiner_joins_pprint_layout_and_drops_other_lines():
    j = DictJoiner()
    out = [j.feed(t) for t in PPRINT.splitlines()]
    assert out[:-1] == [None] * 6 and out[-1].startswith("{'loss': 0.0, 'grad_norm': 0.0,")
    j = DictJoiner()
    assert [j.feed(t) for t in ("{'loss': 0.0,", "Traceback (most recent call last):", " 'x': 1}")] == [None] * 3


def test_pprint_metrics_dict_is_read_as_one_row_line_by_line_and_by_the_chunk_scanner(tmp_path):
    assert "GD610" in _ids(run_text(PPRINT))
    from doctor.analyze import analyze
    p = tmp_path / "log.txt"
    p.write_text("noise line\n" * 50 + PPRINT)
    assert "GD610" in [f.rule_id for f in analyze([str(p)]).findings]


def test_wrapper_exception_unwraps_repr_on_next_line():
    w = Where("log.txt", 10)
    outer = ExceptionInfo("hydra.errors.InstantiationException", "Error in call to target 'a.B':", (), w, None, 5, "x")
    nxt = LogLine("AttributeError(\"'GRPOConfig' object has no attribute 'top_p'\")", "r", Where("log.txt", 11), None, 6)
    inner = unwrap(outer, [nxt])
    assert (inner.type, inner.message) == ("AttributeError", "'GRPOConfig' object has no attribute 'top_p'")
    plain = ExceptionInfo("ValueError", "bad value", (), w, None, 5, "x")
    assert unwrap(plain, [nxt]) is plain


def test_hints_read_the_message():
    assert message_hints("Unknown model. Did you mean Qwen2? Please set --trust-remote-code.") == [
        "Did you mean Qwen2?", "Please set --trust-remote-code."]
    assert message_hints("index out of range") == []
    # a purpose, then what to do (vLLM config.py _get_and_verify_max_len), and a "make sure" that names a setting
    assert message_hints("... (max_position_embeddings=32768). To allow overriding this maximum, set the env var "
                         "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with caution.") == [
        "To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."]
    assert message_hints("The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure "
                         "that `max_model_len` is no smaller than the number of text tokens.") == [
        "Make sure that `max_model_len` is no smaller than the number of text tokens."]
    assert message_hints("Make sure everything is right.") == []   # names nothing to change
    assert flags_named("RLHF do not support sequence parallel") == ["sequence_parallel_size"]
    assert flags_named("KeyError 'grpo'", {"loss_type": "grpo"}) == ["loss_type"]
    assert "239 token(s) longer" in negative_budget("max_tokens must be at least 1, got -239.")
    assert negative_budget("max_tokens must be at least 1, got 3") == ""
    assert attribute_owner("'GRPOConfig' object has no attribute 'top_p'")[0] == "trl"
    assert attribute_owner("'list' object has no attribute 'get'") is None


def test_phase_and_part_from_frames():
    fr = (Frame("x/transformers/trainer.py", 1, "_maybe_log_save_evaluate"), Frame("x/swift/t.py", 2, "log"))
    assert phase_of(fr) == "logging the step's metrics"
    assert phase_of((Frame("x/transformers/trainer.py", 1, "training_step"),)) == "the training step"
    lora = (Frame("site-packages/vllm/lora/ops/triton_ops/lora_shrink_op.py", 1, "_lora_shrink"),)
    assert part_of(lora).id == "vllm-lora"
    rpc = (Frame("site-packages/vllm/v1/engine/core.py", 1, "collective_rpc"),)
    assert part_of(rpc, "POST /update_flattened_params/ HTTP/1.1").id == "vllm-weight-load"
    assert part_of(rpc, "exception=Exception('Call to collective_rpc method failed: NCCL error: x')").id == "vllm-nccl-group"
    assert part_of(rpc, "") is None


def test_vllm_memory_note_only_when_kv_cache_exceeds_the_fit():
    line = ("Desired GPU memory utilization is (0.9, 20.0 GiB). Replace gpu_memory_utilization config with "
            "`--kv-cache-memory=1000` to fit into requested memory, or `--kv-cache-memory=1200` to fully utilize gpu "
            "memory. Current kv cache memory in use is {} bytes.")
    assert vllm_memory_note(line.format(2000)) is not None
    assert vllm_memory_note(line.format(900)) is None


NCCL = "\n".join(f"node1:100:{200 + i} [{i}] NCCL INFO Channel 0{i}/0 : {i}[{i}] -> {i + 1}[{i + 1}] via P2P/CUMEM"
                 for i in range(6)) + "\nnode1:100:300 [1] NCCL INFO ncclCommSplit comm 0x1 rank 1 nranks 8\n"


def test_nccl_debug_tail_is_a_collective_stall_but_not_when_an_error_follows():
    assert "GD308" in _ids(run_text(NCCL))
    assert "GD308" not in _ids(run_text(NCCL + "RuntimeError: NCCL error in: x\n"))
    assert "GD308" not in _ids(run_text(NCCL + "\n".join(f"[INFO:swift] step {i}" for i in range(8))))


GARBLED = ("more onK the effectively for of and ________ arema银行, set Frog ор the 앞으로 and on,\n"
           "\"物质 is is is is is is ...\n")


def test_garbled_completions_but_not_log_lines():
    assert "GD645" in _ids(run_text(GARBLED))
    normal = ("[INFO:swift] loss loss loss loss loss\n"
              "tensor([nan, nan, nan, nan, nan, nan])\n"
              "| a | a | a | a | a |\n"
              "中文说明 with English words\n")
    assert "GD645" not in _ids(run_text(normal))


CUT = ('Traceback (most recent call last):\n  File "/x/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py", '
       'line 10, in training_step\n    return super().training_step(model, inputs)\n')


def test_vllm_mode_without_use_vllm_only_in_a_failed_run():
    cmd = "swift rlhf --rlhf_type grpo --model m --vllm_mode server --dataset d"
    assert "GD417" in _ids(run_text(CUT, command=cmd))
    assert "GD417" not in _ids(run_text(CUT, command=cmd + " --use_vllm true --vllm_server_host 1.2.3.4"))
    assert "GD417" not in _ids(run_text("[INFO:swift] End time of running main\n", command=cmd))


def test_healthy_real_runs_gain_no_error(tmp_path):
    from doctor.analyze import analyze
    for d in sorted((ROOT / "fixtures" / "logs").glob("real-*healthy*")):
        if d.suffix == ".json":
            continue
        assert not [f for f in analyze([str(d)]).findings if f.severity.name == "error"], d.name


def test_keyerror_from_args_names_the_flag_and_entry_point():
    text = ('Traceback (most recent call last):\n  File "/e/site-packages/swift/cli/sft.py", line 10, in <module>\n'
            '    sft_main()\n  File "/e/site-packages/swift/llm/train/sft.py", line 137, in _get_trainer_kwargs\n'
            "    'compute_loss_func': get_loss_func(args.loss_type)\n"
            '  File "/e/site-packages/swift/plugin/loss.py", line 869, in get_loss_func\n'
            "    return LOSS_MAPPING[loss_type]['loss_func']\nKeyError: 'grpo'\n")
    f = run_text(text)[0]
    assert f.category == "argument-error-other" and "--loss_type" in f.message and "swift rlhf" in f.fix[0]


IPY = ("---------------------------------------------------------------------------\n"
       "ValueError                                Traceback (most recent call last)\n"
       "Cell In[3], line 1\n----> 1 trainer.train()\n\n"
       "File ~/env/lib/python3.11/site-packages/vllm/sampling_params.py:416, in SamplingParams._verify_args(self)\n"
       "    415 if self.max_tokens < 1:\n"
       "--> 416     raise ValueError(f\"max_tokens must be at least 1, got {self.max_tokens}.\")\n\n"
       "ValueError: max_tokens must be at least 1, got -12.\n")


def test_ipython_frames_are_parsed():
    from conftest import lines_of

    from doctor.sources.traceback import TracebackTracker
    t = TracebackTracker()
    got = [e for ln in lines_of(IPY) if (e := t.feed(ln)) is not None]
    assert got and got[-1].frames[-1].func == "_verify_args" and "raise ValueError" in got[-1].frames[-1].code
    assert "vllm/sampling_params.py" in got[-1].frames[-1].path


def test_the_engines_encoding_pool_is_not_asynchronous_generation():
    """ms-swift 4.x InferEngine._batch_encode encodes a batch's requests in a ThreadPoolExecutor under ``_infer``: a row
    the template cannot encode raises from that worker (the scoreboard's bad-row-system-last), with no asynchronous
    generation in the run; the trainer's own infer task in the worker is (ms-swift 3.x --async_generate)."""
    site = "/venv/lib/python3.11/site-packages/"
    encode = (Frame(site + "swift/infer_engine/transformers_engine.py", 570, "_infer"),
              Frame(site + "swift/infer_engine/infer_engine.py", 332, "_batch_encode"),
              Frame("/usr/lib/python3.11/concurrent/futures/_base.py", 449, "result"),
              Frame("/usr/lib/python3.11/concurrent/futures/thread.py", 58, "run"),
              Frame(site + "swift/template/base.py", 696, "encode"),
              Frame(site + "swift/template/base.py", 1449, "_swift_encode"))
    assert part_of(encode) is None
    rollout = (Frame("/usr/lib/python3.11/concurrent/futures/thread.py", 58, "run"),
               Frame(site + "swift/trainers/rlhf_trainer/grpo_trainer.py", 748, "infer_task"))
    assert part_of(rollout).id == "async-generation"


def test_a_session_finished_again_after_its_traceback_arrived_gets_the_structural_verdict():
    """watch finishes the same session every few seconds while the run goes on: a verdict computed before the
    traceback arrived (none) must not stand for the finish after it."""
    import io

    from doctor.engine import Session
    from doctor.sources.logtext import LineReader
    s = Session()
    reader = LineReader("console.log", [0])
    before = b"[INFO:swift] Start time of running main: 2026-01-01 00:00:00\n"
    tb = (b"Traceback (most recent call last):\n"
          b'  File "/venv/lib/python3.11/site-packages/swift/template/base.py", line 1449, in _swift_encode\n'
          b"    assert response_role in {'assistant'}, f'response_role: \"{response_role}\"'\n"
          b'AssertionError: response_role: "system"\n')
    for line in reader.lines(io.BytesIO(before)):
        s.feed_line(line)
    assert not [f for f in s.finish() if f.rule_id.startswith("GD99")]
    for line in reader.lines(io.BytesIO(tb)):
        s.feed_line(line)
    got = [f for f in s.finish() if f.severity.name == "error"]
    assert got and got[0].category == "dataset-or-template-error", [(f.rule_id, f.category) for f in got]


def test_a_vllm_feature_named_by_the_failing_code_is_what_to_turn_off():
    # the V1 scheduler's assert (prime-rl#1359): the code line names the feature
    sched = (Frame("site-packages/vllm/v1/core/sched/scheduler.py", 977, "update_from_output",
                   "assert not prompt_logprobs_tensors"),)
    what, fix = feature_of(sched)
    assert "prompt logprobs" in what and "Stop requesting prompt_logprobs" in fix
    # nothing in the code or the message: the lines around it (a title) name it
    assert "prefix caching" in feature_of((), "", "AssertionError when using automatic prefix caching")[0]
    assert feature_of((Frame("site-packages/vllm/worker/model_runner.py", 1, "execute_model", "x = f(y)"),),
                      "boom", "") is None
