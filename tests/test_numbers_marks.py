"""Issue 17 point 17, beyond GD101: each rule whose message or fix shows a number marks it read (bare), computed
(``(computed)``) or assumed (``(assumed)``), and a fix that rests on an assumption names it. Each case is a real
log (fixtures/logs, copied from real runs or threads), a real error line as a user pastes it alone (the wording
of the library source, quoted in the rule's ``examples``), or a real command (fixtures/preflight).
"""
from __future__ import annotations

import shlex
from pathlib import Path

from doctor.analyze import analyze
from doctor.preflight import preflight_command

ROOT = Path(__file__).resolve().parent.parent / "fixtures"


def _findings(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in analyze([str(path)]).to_json()["findings"]:
        out.setdefault(f["rule_id"], f)
    return out


def _pasted(tmp_path: Path, line: str) -> dict[str, dict]:
    p = tmp_path / "paste.log"
    p.write_text(line + "\n", encoding="utf-8")
    return _findings(p)


def _preflight(case: str, gpu_mem: float | None) -> dict[str, dict]:
    argv = shlex.split((ROOT / "preflight" / case / "command.txt").read_text(encoding="utf-8"))
    rep = preflight_command(argv, {}, gpu_mem_gib=gpu_mem, swift_version="4.6.0", live_gpu=False).to_json()
    return {f["rule_id"]: f for f in rep["findings"]}


def test_gd103_line_alone_assumes_the_whole_batch_and_says_so(tmp_path):
    f = _pasted(tmp_path, "ValueError: num_generations must be greater than 1 for GRPO")["GD103"]
    assert "= 1 (assumed)" in f["fix"][0]
    assert "(assumes world size 1, per_device_train_batch_size 1 and gradient_accumulation_steps 1" in f["fix"][0]


def test_gd103_real_log_marks_only_what_the_log_lacks():
    # real ms-swift 4.6 run: --per_device_train_batch_size 2 in the launcher line, world size 1 on the rank line,
    # no gradient_accumulation_steps anywhere
    f = _findings(ROOT / "logs" / "real-num-generations-1")["GD103"]
    assert f["fix"][0].startswith("--num_generations 2 (divisors of the generation batch 1 x 2 x 1 (assumed) = 2 "
                                  "(assumed)) (assumes gradient_accumulation_steps 1: not in the log)")


def test_gd102_factors_read_from_the_error_are_bare_and_the_product_computed(tmp_path):
    # ms-swift 4.x wording (rules/batch/GD102 examples); the real run's log is fixtures/logs/real-batch-div-eval
    line = ("ValueError: The global eval batch size (1 x 3) must be evenly divisible by num_generations_eval (2). "
            "Valid values: [1, 3].")
    for f in (_pasted(tmp_path, line)["GD102"], _findings(ROOT / "logs" / "real-batch-div-eval")["GD102"]):
        assert "world size 1 x per_device_eval_batch_size 3 = 3 (computed)" in f["message"]
        assert "(assumed)" not in f["message"] and not any("(assumes" in x for x in f["fix"])


def test_gd437_line_alone_marks_every_factor(tmp_path):
    f = _pasted(tmp_path, "AttributeError: 'TrainerState' object has no attribute 'last_model_checkpoint'")["GD437"]
    for part in ("world size 1 (assumed)", "per_device_train_batch_size 1 (assumed)"):
        assert part in f["message"]
    # nothing shows a GRPO run: no num_generations is assumed to divide by
    assert "num_generations" not in f["message"]
    assert "ms-swift's defaults, not in the inputs" in f["fix"][0]


def test_gd605_line_alone_names_the_default_length(tmp_path):
    f = _pasted(tmp_path, "AssertionError: The soft_cache_length must be set when using soft overlong rewards.")["GD605"]
    assert "max_completion_length 512 (assumed)" in f["fix"][0]
    assert "(assumes max_completion_length 512: ms-swift's default" in f["fix"][0]


def test_gd443_count_not_in_the_error_is_assumed(tmp_path):
    f = _pasted(tmp_path, "ValueError: At most 1 image(s) may be provided in one request.")["GD443"]
    assert "2 is assumed" in f["fix"][0]
    f = _pasted(tmp_path, "ValueError: You set `image=1` (or defaulted to 1) in `--limit-mm-per-prompt`, but passed 3 "
                          "input items of the same modality.")["GD443"]
    assert "assumed" not in f["fix"][0] and '"image": 3' in f["fix"][0]


def test_gd306_port_read_from_the_bind_line_is_bare_and_a_missing_one_is_assumed(tmp_path):
    # torch >= 2.4 names no port in the EADDRINUSE line; torch 2.1-2.3's bind warning does (GD306 examples)
    f = _pasted(tmp_path, "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
                          "network address. useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
    assert f["GD306"]["message"].startswith("Port 29500 (assumed) is already in use")
    assert "torchrun's default master port is assumed" in f["GD306"]["message"]
    f = _pasted(tmp_path, "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - "
                          "Address already in use).")
    assert f["GD306"]["message"].startswith("Port 29500 is already in use")


def test_gd202_server_share_not_in_the_command_is_assumed():
    # modelscope/ms-swift#5894: the swift rollout command sets no --vllm_gpu_memory_utilization
    f = _findings(ROOT / "logs" / "dev-004-rollout-server-vision-oom")["GD202"]
    assert any("(now 0.9 (assumed))" in x for x in f["fix"])


def test_gd420_batch_note_marks_the_defaults_of_a_real_launch(tmp_path):
    # modelscope/ms-swift#8223's command alone: 8 visible GPUs, no NPROC_PER_NODE, no batch size, accumulation or
    # num_generations (its log shows rank 12, so with the log GD420 stays silent: the processes were launched)
    src = ROOT / "logs" / "dev-028-max-tokens-negative-sampling-params" / "command.txt"
    (tmp_path / "command.txt").write_bytes(src.read_bytes())
    f = _findings(tmp_path)["GD420"]
    note = next(x for x in f["fix"] if x.startswith("With 8 processes"))
    assert "per_device_train_batch_size 1 (assumed)" in note and "(assumes num_generations 8" in note


def test_hang_first_step_arithmetic_of_read_values_is_computed():
    f = _findings(ROOT / "logs" / "real-hang-cut-at-first-step")["GD320"]
    assert any("gradient_accumulation_steps 1 = 4 (computed) completions per rank" in x for x in f["fix"])


def test_more_generations_reads_the_world_size_of_a_real_run():
    # real ms-swift 4.6 run: the rank line gives world size 1, so only the product is marked
    f = _findings(ROOT / "logs" / "real-dtype-bf16-from-bf16-base")["GD610"]
    assert any("(world size 1 x per_device_train_batch_size 4 x 2 = 8 (computed)" in x for x in f["fix"])


def test_memory_plan_names_what_a_real_command_leaves_out():
    # modelscope/ms-swift#5571's command: no NPROC_PER_NODE, no max_length, every other planner input given
    f = _preflight("dev-005-qwen3-8b-lora-colocate", 80.0)
    plan = f["GD470"]["message"]
    assert "1 (assumed) training process(es)" in plan and "GiB (assumed) in training" in plan
    assert "Assumed (ms-swift's defaults, not in the command): world size 1, max_length 512 for the prompt." in plan
    disk = f["GD462"]["message"]
    assert "one each 500 (assumed) steps" in disk and "GiB (computed)" in disk  # --lora_rank 8 is given
    assert "Assumed (ms-swift's defaults, not in the command): save_steps 500." in disk


def test_memory_plan_world_size_from_the_command_is_bare():
    f = _preflight("seed02-32b-lora-zero3-8gpu", 80.0)["GD470"]
    assert "; 8 training process(es)." in f["message"] and "world size" not in f["message"].split("Assumed")[-1]


def test_rollout_http_port_not_in_the_log_is_assumed():
    # modelscope/ms-swift#9416: the log names the group port 51216 (read) but not the HTTP port
    f = _findings(ROOT / "logs" / "dev-025-server-mode-socket-timeout-51216")
    assert any("port 51216 (not only on its HTTP port 8000 (assumed))" in x for x in f["GD305"]["fix"])
    assert any("/health/` (port 8000 assumed: the default)" in x for x in f["GD320"]["fix"])


def test_gd102_expected_inputs_product_of_read_flags_is_computed():
    # modelscope/ms-swift#4081: batch 4 and accumulation 8 read from the run, their product computed
    f = _findings(ROOT / "logs" / "dev-002-eval-expected-32-got-4")["GD102"]
    assert any("per_device_train_batch_size 4 x gradient_accumulation_steps 8 = 32 (computed)" in x for x in f["fix"])
