"""The shipped raise-site index (doctor/data/raise_sites.idx) against the real exception lines of fixtures/logs
and of the public-issue logs copied into fixtures/raise-index/dev-log-exceptions.jsonl (case id = provenance)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from doctor.classify import raise_sites as rs
from doctor.sources.logtext import LineReader
from doctor.sources.traceback import TracebackTracker

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "fixtures" / "logs"
DEV = ROOT / "fixtures" / "raise-index" / "dev-log-exceptions.jsonl"

CPP_OOM = "C++ origin: the CUDA caching allocator (c10) builds the OOM message"
NCCL = "C++ origin: c10d's NCCL process group builds the message"
NO_MSG = "no message: torchrun's ChildFailedError summary, or a bare exception"
PY = "CPython's own message (attribute lookup, call check, import system, dict key)"
# fixtures/logs case -> (exception type, start of message) -> the package that raises it, or why none can
EXPECTED: dict[str, str] = {
    # torch's Module.load_state_dict raised it (a DeepSpeed resume); transformers' _load_pretrained_model words it alike
    "real-thread-llamafactory-lora-resume-missing-base-keys": "transformers",
    "real-thread-vllm-registry-subprocess-sigsegv": "vllm",
    "real-thread-deepspeed-zero-offload-client-optimizer": "deepspeed",
    "real-thread-vllm-qwen3-architecture-unsupported": "vllm",
    "real-thread-unsloth-adapter-folder-as-vllm-model": "vllm",
    "real-thread-medicalgpt-resume-no-valid-checkpoint": "transformers",
    # torch's Module.load_state_dict raised it here (a model's own loader); transformers raises the same wording
    "real-thread-msswift-zero3-load-state-dict-shape-0": "transformers",
    "dev-001-evalscope-empty-eval-dataset": "ms-swift", "dev-002-eval-expected-32-got-4": "ms-swift",
    "dev-020-batch-1x1-numgen8-plain-traceback": "trl", "dev-021-batch-1x1-numgen8-ga-not-counted": "trl",
    "dev-024-lora-checkpoint-missing-args-json": "ms-swift", "edge-async-generate-colocate": "ms-swift",
    "edge-cached-dataset-grpo": "ms-swift", "edge-deepspeed-fp16-loss-scale-min": "deepspeed",
    "edge-deepspeed-not-installed-46": "transformers", "edge-deepspeed-with-device-map": "ms-swift",
    "edge-fp16-unscale": "torch", "edge-fsdp2-with-deepspeed": "ms-swift", "edge-gbs-and-spg-both-set": "trl",
    "edge-grpo-truncation-right": "ms-swift", "edge-image-tokens-mismatch": "transformers",
    "edge-max-length-failed-retrieve": "ms-swift", "edge-ngpu-not-multiple-of-nproc": "ms-swift",
    "edge-no-training-dataset": "ms-swift", "edge-remaining-argv-removed-vllm-flags": "ms-swift",
    "edge-reward-funcs-missing-43": "ms-swift", "edge-reward-weights-mismatch-46": "ms-swift",
    "edge-rm-plugin-unknown-35": "ms-swift", "edge-rollout-free-memory-engine-core": "vllm",
    "edge-rollout-is-needs-vllm-0102": "ms-swift", "edge-soft-overlong-no-cache": "ms-swift",
    "edge-trl-too-old-42": "transformers", "edge-v34-async-gpu-split": "ms-swift",
    "edge-vllm-kv-cache-no-blocks": "vllm", "edge-vllm-mm-limit-per-prompt": "vllm",
    "edge-vllm-mode-required-312": "ms-swift", "edge-vllm-not-available-46": "ms-swift",
    "edge-vllm-sleep-expandable-segments": "vllm", "edge-vllm-tp-not-dividing-world": "ms-swift",
    "edge-vllm-with-device-map": "ms-swift", "real-batch-div-eval": "ms-swift", "real-batch-div-eval-default": "ms-swift",
    "real-batch-div-grad-accum": "ms-swift", "real-batch-div-train": "ms-swift",
    "real-cpu-default-dtype-bf16": "transformers", "real-ddp2-batch-div-child-failed": "ms-swift",
    "real-full-model-is-lora-ckpt": "transformers", "real-full-resume-from-lora-ckpt": "transformers",
    "real-grpo-full-bf16-no-use-cpu": "transformers", "real-legacy-train-type-flag": "ms-swift",
    "real-num-generations-1": "ms-swift", "real-probe-no-model-type": "ms-swift", "real-probe-no-template": "ms-swift",
    "real-unknown-flag": "ms-swift", "dev-028-max-tokens-negative-sampling-params": "vllm",
    "real-trl-vllm-client-connect-timeout": "trl", "real-peft-load-full-checkpoint-as-adapter": "peft",
    "real-thread-qlora-checkpoint-no-config-json": "transformers",
    "real-transformers5-load-adapter-checkpoint-as-model": "transformers",
    "real-thread-generation-config-invalid-at-export": "transformers",
    "real-thread-vllm-fp8-capability-86": "vllm", "real-thread-vllm-heads-not-divisible-tp3": "vllm",
    # datasets' builder.py _prepare_split_single wraps the json builder's parse error
    "edge-dataset-jsonl-parse-error": "datasets",
    # verl's reward dispatch (verl/utils/reward_score/__init__.py default_compute_score), quoted in the user's prose
    "real-thread-verl-reward-not-implemented-data-source": "verl",
    # verl's DataProto.chunk assertion (verl/protocol.py), ending the user's sentence in an EasyR1 thread (EasyR1
    # carries verl's protocol.py)
    "real-thread-easyr1-dataproto-unequal-chunk": "verl",
}
# (case, exception type) -> reason no site can match
GAPS: dict[tuple[str, str], str] = {
    # docker compose's `vllm_1   | ` prefix taken off, the CUDA runtime's own error (c10/cuda/CUDAException.cpp
    # c10_cuda_check_implementation: the driver's message): no Python library raises its words
    ("real-thread-vllm-no-kernel-image-p100", "RuntimeError"): "the CUDA runtime's error, raised from C++",
    # the CUDA runtime's cudaErrorStreamCaptureInvalidated, raised by c10's CUDA check under CUDAGraph.capture_end
    ("real-thread-vllm-omni-cuda-graph-capture-flash-attn", "torch.AcceleratorError"):
        "the CUDA runtime's error, raised from C++",
    # the words are the model's chat template's (tokenizer_config.json), raised through transformers' raise_exception
    # with a variable message: no library's source holds them
    ("real-thread-medusa-chat-template-roles-alternate", "jinja2.exceptions.TemplateError"):
        "the chat template's own words, raised by transformers' raise_exception(message)",
    # DeepSpeed 0.8.1 raised it as a plain Exception in op_builder/builder.py; the index reads 0.14 on (its
    # CUDAMismatchException template), and the paste cuts the line before its end: a 0.7 match, below the threshold
    ("real-thread-deepspeed-cuda-toolkit-mismatch-pip-install", "Exception"):
        "DeepSpeed 0.8's plain Exception, older than the indexed releases, its line cut",
    # flash-attn's TORCH_CHECK in csrc/flash_attn/flash_api.cpp (mha_varlen_bwd): C++, no Python raise site
    ("real-thread-axolotl-gemma-l40s-flash-attn-backward-head-dim", "RuntimeError"):
        "flash-attn's C++ TORCH_CHECK, no Python raise site",
    # CPython's builtin zip(strict=True) raises it (Python/bltinmodule.c), called from torch's lr_scheduler.py
    ("real-thread-llamafactory-lora-deepspeed-torch210-scheduler-zip", "ValueError"):
        "raised by CPython's builtin zip(strict=True), no library raise site",
    # torch raises it through DistributedDataParallel._log_and_throw(ValueError, "...") (nn/parallel/distributed.py),
    # a call, not a raise statement the index reads
    ("real-thread-zero-nlp-ddp-device-ids-model-on-two-gpus", "ValueError"):
        "raised through torch DDP's _log_and_throw helper, not a raise statement",
    # CPython raises it for a dict lookup (vLLM's `param = params_dict[name]` in a model's load_weights): the message is
    # only the key, a weight's name, which no raise statement holds
    ("verl-tool-weight-sync-keyerror-base-layer", "KeyError"): "a dict lookup's KeyError (vLLM's params_dict[name])",
    # unsloth_zoo's saving_utils.py raises it; unsloth_zoo is not among the indexed packages
    # (tools/raise_index_packages.toml)
    ("real-thread-unsloth-merged-save-lora-count-gemma3n", "RuntimeError"):
        "unsloth_zoo's own raise, a package the index does not read",
    # SIGINT's default handler raises it from the interpreter (Modules/signalmodule.c), not from a library's raise
    ("real-swift-ctrl-c-twice-during-import", "KeyboardInterrupt"): "raised by CPython's SIGINT handler, no raise site",
    # torch's autograd engine checks the roots of backward in C++ (torch/csrc/autograd/autograd.cpp run_backward)
    ("real-thread-llama-chinese-lora-checkpointing-no-grad", "RuntimeError"):
        "torch autograd raises from C++ (autograd.cpp run_backward): no Python raise site",
    # gloo's C++ transport (third_party/gloo/gloo/transport/tcp/unbound_buffer.cc waitSend/waitRecv), vendored in torch
    ("real-trl-gloo-timeout-ddp2", "RuntimeError"): "gloo raises from C++ (unbound_buffer.cc): no Python raise site",
    # torch's CPU allocator raises from C++ (c10/core/impl/alloc_cpu.cpp): only torch.distributed's Python is indexed
    ("real-thread-cpu-allocator-cannot-allocate", "RuntimeError"): "c10's C++ allocator is not indexed source",
    # the hub client's network errors on the way (the sandbox that made the fixture has no network): httpx, httpcore
    # and huggingface_hub are not indexed packages
    ("real-peft-load-full-checkpoint-as-adapter", "httpcore.ConnectError"): "httpcore is not an indexed package",
    ("real-peft-load-full-checkpoint-as-adapter", "httpx.ConnectError"): "httpx is not an indexed package",
    ("real-peft-load-full-checkpoint-as-adapter", "huggingface_hub.errors.LocalEntryNotFoundError"):
        "huggingface_hub is not an indexed package",
    ("real-safetensors-header-cut", "safetensors._safetensors_rust.SafetensorError"):
        "safetensors raises from Rust (src/tensor.rs): no Python source to index",
    ("real-safetensors-header-lfs", "safetensors._safetensors_rust.SafetensorError"):
        "safetensors raises from Rust (src/tensor.rs): no Python source to index",
    ("real-thread-verl-ray-actor-died-system-error", "ray.exceptions.ActorDiedError"): "ray is not an indexed package",
    # verl's recipes (recipe/dapo/dapo_ray_trainer.py) sit outside the verl package the index reads
    ("real-thread-verl-dapo-gen-batches-exhausted", "ValueError"): "verl's recipe/ folder is not indexed source",
    ("real-thread-math-verify-signal-worker-thread", "ValueError"):
        "CPython's signal module raises it from C (Modules/signalmodule.c): no Python source to index",
    ("real-thread-accelerate-deepspeed-config-file-fields", "ValueError"):
        "accelerate's literal text is one clause before the run's own long list: below a confident match (GD428 reads it)",
    # pydantic's own summary line names only the config class; vLLM's reason is the `Value error, ...` line after it
    ("real-thread-vllm-batched-tokens-below-max-model-len", "ValidationError"):
        "pydantic-core builds its summary in Rust: no Python source to index",
    ("real-thread-unsloth-untrained-tokens", "ValueError"): "unsloth_zoo is not an indexed package (GD444 reads it)",
    ("real-thread-verl-vllm-rope-scaling-factor", "AssertionError"): NO_MSG,
    ("real-thread-x-r1-grpo-zero3-free-param-assert", "AssertionError"):
        "DeepSpeed's `assert ..., param.ds_summary()` message is a dict: no literal words to index",
    ("dev-004-rollout-server-vision-oom", "torch.OutOfMemoryError"): CPP_OOM,
    ("edge-oom-8-ranks-zero2-colocate", "torch.OutOfMemoryError"): CPP_OOM,
    ("edge-vl-oom-no-max-pixels", "torch.OutOfMemoryError"): CPP_OOM,
    ("dev-007-colocate-cumem-allocator-oom", "RuntimeError"): "C++ origin: vLLM's cumem_allocator.cpp extension",
    ("real-torch-save-enospc", "RuntimeError"): "C++ origin: torch's caffe2/serialize/inline_container.cc and the "
                                                "C++ standard library's iostream",
    ("real-trl-vllm-client-404-plain-http-server", "Exception"): "trl's `Request failed: {}, {}` has too few literal "
                                                                 "words to be indexed",
    ("real-thread-deepspeed-batch-assert-rich", "AssertionError"): "the message was cut by rich's wrap before the "
                                                                   "words DeepSpeed's template is filed under",
    ("real-torch-load-cut-file", "RuntimeError"): "C++ origin: torch's caffe2/serialize/inline_container.cc (miniz)",
    ("dev-008-vllm-device-cuda3-mismatch", "RuntimeError"): "C++ origin: ATen's device check",
    ("dev-009-custom-trainer-trl-string-indices", "TypeError"): PY,
    ("dev-016-vllm06-embedding-expe", "RuntimeError"): "message cut in the paste ('Expe')",
    ("edge-autograd-nan-anomaly", "RuntimeError"): "C++ origin: autograd anomaly mode",
    ("edge-c10d-port-in-use", "torch.distributed.DistNetworkError"): "C++ origin: c10d TCPStore",
    ("edge-cannot-import-grpoconfig-old-trl", "ImportError"): PY,
    ("edge-flash-attn-undefined-symbol", "ImportError"): "the dynamic loader's message (flash-attn binary)",
    ("edge-grpoconfig-unexpected-kwarg", "TypeError"): PY,
    ("edge-image-unidentified", "PIL.UnidentifiedImageError"): "Pillow: not indexed",
    ("edge-msgspec-missing-46", "ModuleNotFoundError"): PY,
    ("edge-nccl-duplicate-gpu", "torch.distributed.DistBackendError"): NCCL,
    ("edge-nccl-remote-error-after-peer-killed", "torch.distributed.DistBackendError"): NCCL,
    ("edge-nccl-shm-unhandled-system-error", "torch.distributed.DistBackendError"): NCCL,
    ("edge-rank-error-then-nccl-timeouts", "RuntimeError"): "C++ origin: ATen's view/reshape shape check",
    ("real-ddp2-cpu-gloo-shape-error-child-failed", "RuntimeError"): "C++ origin: ATen's view/reshape shape check",
    ("edge-reward-keyerror-solution", "KeyError"): PY,
    ("edge-too-little-data", "AttributeError"): PY,
    ("edge-vllm-import-guided-decoding", "ImportError"): PY,
    ("edge-vllm-pydantic-model-config", "pydantic_core._pydantic_core.ValidationError"): "pydantic-core (Rust) builds it",
    ("edge-vllm-server-mode-no-host", "AssertionError"): NO_MSG,
    ("real-dataset-missing-solution-column", "TypeError"): PY,
    ("real-reward-func-raises", "ValueError"): "the user's own reward function",
    ("dev-035-rewards-view-2x8-size-17", "RuntimeError"): "C++ origin: ATen's view/reshape shape check",
    ("dev-038-concatenate-str-list-prompt", "TypeError"): PY,
    ("dev-049-unsloth-signature-typeerror", "TypeError"): PY,
    ("dev-053-vllm-merge-multimodal-cut", "ValueError"): "message cut in the paste ('Attempted to assi')",
    ("dev-056-index-out-of-bounds-size-0", "IndexError"): "C++ origin: ATen's index check",
    ("dev-064-vllm-serve-dp-duplicate-gpu", "EOFError"): NO_MSG,
    ("real-thread-deepspeed-cpu-adam-jit-missing-header", "subprocess.CalledProcessError"):
        "CPython's subprocess.run(check=True) (Lib/subprocess.py), for torch's ninja build",
    ("real-thread-vllm-registry-subprocess-sigsegv", "subprocess.CalledProcessError"):
        "CPython's CompletedProcess.check_returncode (Lib/subprocess.py), for vLLM's registry child",
}
CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"


def fixture_exceptions() -> list[tuple[str, str, str]]:
    out = []
    for log in sorted(LOGS.glob("*/log.txt")):
        tracker, seen = TracebackTracker(), set()
        with open(log, "rb") as f:
            for line in LineReader(str(log), [0]).lines(f):
                e = tracker.feed(line)
                if e is not None and (e.type, e.message) not in seen:
                    seen.add((e.type, e.message))
                    out.append((log.parent.name, e.type, f"{e.type}: {e.message}" if e.message else e.type))
    return out


FIXTURE_LINES = fixture_exceptions()
DEV_LINES = [json.loads(x) for x in DEV.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize("case, etype, line", FIXTURE_LINES, ids=[f"{c}:{t}" for c, t, _ in FIXTURE_LINES])
def test_fixture_exception_lines(case, etype, line):
    matches = rs.lookup(line)
    if etype == CHILD_FAILED:
        assert not matches  # torchrun's summary has no message
        return
    gap = GAPS.get((case, etype))
    if gap is not None:
        assert not [m for m in matches if m.score >= 0.8], (gap, matches[:2])  # no confident false attribution
        return
    assert case in EXPECTED, f"new exception line: {line[:120]} -- add its package to EXPECTED or its reason to GAPS"
    assert EXPECTED[case] in {m.package for m in matches}, (line[:120], matches[:3])


@pytest.mark.parametrize("row", DEV_LINES, ids=[r["case"][:40] for r in DEV_LINES])
def test_dev_log_exception_lines(row):
    matches = rs.lookup(row["line"])
    if "gap" in row:
        assert not [m for m in matches if m.score >= 0.8], (row["gap"], matches[:2])
    else:
        assert row["package"] in {m.package for m in matches}, (row["line"][:120], matches[:3])


def _best(text):
    ms = rs.lookup(text)
    return {(m.package, m.module, m.where, m.template) for m in ms if m.score >= ms[0].score - 0.2} if ms else set()


MATCHED = sorted({line for case, etype, line in FIXTURE_LINES
                  if case in EXPECTED and etype != CHILD_FAILED and (case, etype) not in GAPS}
                 | {r["line"] for r in DEV_LINES if "package" in r})


@pytest.mark.parametrize("line", MATCHED, ids=[x[:50] for x in MATCHED])
def test_wrapped_and_padded_copies_match_the_same_sites(line):
    want = _best(line)
    assert want
    wrapped = "\n".join(textwrap.wrap(line, 37))                                    # wrapped at spaces
    folded = "\n".join(line[i:i + 41] for i in range(0, len(line), 41))             # cut mid-word, as a terminal
    padded = "  " + line.replace(" ", "   ", 3).replace(", ", ",    ") + "   "        # runs of spaces
    ranked = "\n".join(f"[rank3]: {p}" for p in textwrap.wrap(line, 60))             # rank prefix on every line
    for copy in (wrapped, folded, padded, ranked):
        assert _best(copy) & want, copy


@pytest.mark.parametrize("prefix", ["[rank3]: ", "[ERROR:swift] ", "ERROR 05-12 10:00:00 [arguments.py:12] ",
                                    "(VllmWorker rank=0 pid=42) ", "2025-05-12 10:00:00,123 - ERROR - ",
                                    "[2025-05-12 10:00:00,123] [ERROR] [engine.py:12:step] "])
def test_log_prefixes(prefix):
    line = "vllm_mode is required when use_vllm is true"
    assert rs.lookup(prefix + "ValueError: " + line)[0].template == line
    assert rs.lookup(prefix + line)[0].template == line


def test_stack_before_the_exception_line_and_hole_values():
    text = ('Traceback (most recent call last):\n  File "x/swift/rlhf_trainers/args_mixin.py", line 229, in '
            "_init_generation_batch_params\n    raise ValueError(\nValueError: generation_batch_size (3) must be "
            "evenly divisible by num_generations (4). Valid values: [3].")
    top = rs.lookup(text)[0]
    assert (top.package, top.kind, top.versions) == ("ms-swift", "ValueError", "4.2-4.6")
    assert top.holes == {"self.generation_batch_size": "3", "num_generations": "4", "possible_values": "[3]"}


def test_narrow_versions_and_raised_by():
    line = ("ValueError: The global train batch size (1 x 1) must be evenly divisible by the number of generations per "
            "prompt (8). Given the current train batch size, the valid values for the number of generations are: [].")
    assert rs.narrow_versions(rs.lookup(line)) == {"ms-swift": "3.1-3.3", "trl": "0.15-0.16"}
    got = rs.raised_by(line)
    # the condition: trl 0.16.1 trl/trainer/grpo_trainer.py line 428, read by hand from the wheel
    assert {"package": "trl", "versions": "0.15-0.16", "function": "GRPOTrainer.__init__",
            "module": "trl/trainer/grpo_trainer.py", "kind": "ValueError",
            "condition": "self.num_generations not in possible_values"} in got
    assert rs.raised_by("RuntimeError: CUDA error: an illegal memory access was encountered") == []


def test_index_records_how_it_was_built():
    meta = rs.index().meta
    assert meta["format"] == 3 and meta["updated"] and meta["sites"] > 30000
    assert set(meta["versions"]) >= {"ms-swift", "trl", "vllm", "deepspeed", "peft", "accelerate", "transformers",
                                     "torch", "llamafactory", "openrlhf", "axolotl", "bitsandbytes", "datasets",
                                     "safetensors", "flash-attn", "verl"}
    assert meta["renamed"] == {"llamafactory": {"llmtuner": ["0.3.3", "0.4.0", "0.5.3", "0.6.3"]}}
    assert rs.DATA.stat().st_size < 5 * 1024 * 1024


def test_cli_import_and_healthy_analyze_do_not_load_the_index():
    code = ("import sys, doctor.cli\nfrom doctor.analyze import analyze\n"
            f"analyze([{str(LOGS / 'real-grpo-lora-healthy' / 'log.txt')!r}])\n"
            "m = sys.modules.get('doctor.classify.raise_sites')\nprint(bool(m and m.loaded()))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "False"


def test_explain_a_message():
    from typer.testing import CliRunner

    from doctor.cli import app
    r = CliRunner().invoke(app, ["explain", ("ValueError: generation_batch_size (3) must be evenly divisible by "
                                            "num_generations (4). Valid values: [3].")])
    assert r.exit_code == 0, r.output
    assert "GD101" in r.output and "ms-swift 4.2-4.6" in r.output and "_init_generation_batch_params" in r.output
    r = CliRunner().invoke(app, ["explain", "nothing anybody ever printed here"])
    assert r.exit_code == 2
    assert r.output.count("\n") <= 1


def test_shipped_index_is_what_the_builder_writes():
    """Re-encoding the shipped file (tools/build_raise_index.py --convert) gives its bytes back: the file holds
    nothing the builder would not write."""
    sys.path.insert(0, str(ROOT / "tools"))
    import build_raise_index as bri
    assert bri.convert(rs.DATA)[0] == rs.DATA.read_bytes()


def test_re_and_regex_read_an_ascii_message_alike():
    # raise_sites._try matches a message that _same_in_re accepts with the re build of a template, and everything else
    # (partial matches, other texts) with the `regex` build: on such messages both builds must find the same matches
    from doctor.classify.raise_sites import _HOLES, _same_in_re
    fill = {"int": "42", "float": "-0.5e3", "name": "model.layers.0", "quoted": "'a b'", "any": "some thing: x"}
    sites = rs.index().sites[::23]
    assert len(sites) > 1000
    checked = 0
    for site in sites:
        text = _HOLES.sub(lambda m: fill[m.group(0)[1:-1]], site.row[5].replace("{{", "{").replace("}}", "}"))
        for msg in (text, text + " and more", "lead: " + text, text[: len(text) // 2], text.replace(" ", "")):
            if not _same_in_re(msg):
                continue
            for nows in (False, True):
                a, b = site.regex(nows, third_party=False), site.regex(nows, third_party=True)
                for op in ("fullmatch", "match", "search"):
                    ma, mb = getattr(a, op)(msg), getattr(b, op)(msg)
                    assert (ma and (ma.span(), ma.groups())) == (mb and (mb.span(), mb.groups())), (site.row[5], msg, op)
                    checked += 1
    assert checked > 20000
    assert not _same_in_re("caf\u00e9") and not _same_in_re("a\x1cb") and _same_in_re("plain\ttext")


def test_a_message_outside_the_head_of_a_template_has_no_partial_match():
    # raise_sites._try skips the `regex` build's partial match (and its import) when the message neither begins with
    # the template's head nor stops inside it: the partial match must then find nothing, and must find what it found
    # for every message that passes
    from doctor.classify.raise_sites import _HOLES
    fill = {"int": "42", "float": "-0.5e3", "name": "model.layers.0", "quoted": "'a b'", "any": "some thing: x"}
    sites = rs.index().sites[::37]
    assert len(sites) > 800
    others = [s.row[5] for s in sites[::50]]
    skipped = passed = 0
    for site in sites:
        text = _HOLES.sub(lambda m: fill[m.group(0)[1:-1]], site.row[5].replace("{{", "{").replace("}}", "}"))
        for msg in (text, text[: len(text) // 2], text[: len(text) // 3], text.replace(" ", ""), " " + text,
                    text.replace(" ", "  ", 1), text[:1].swapcase() + text[1:], *others):
            for nows in (False, True):
                m = msg.replace(" ", "") if nows else msg
                head = site.head(nows)
                hit = site.regex(nows).fullmatch(m, partial=True)
                if head and not (m.startswith(head) or head.startswith(m)):
                    assert hit is None, (site.row[5], m, nows)
                    skipped += 1
                else:
                    passed += 1
    assert skipped > 10000 and passed > 1000
    assert rs._Site(["", "", "", "", "", "{int} of {{x}} b"], frozenset()).head() == ""
    assert rs._Site(["", "", "", "", "", "{{x}} of {int}"], frozenset()).head() == "{x}"
    assert rs._Site(["", "", "", "", "", "a b{int}c"], frozenset()).head(nows=True) == "ab"


def test_the_decompressed_buckets_in_the_cache_folder_are_the_index_s(tmp_path, monkeypatch):
    """raise_store.Store keeps the buckets decompressed in the cache folder once a lookup follows 2nd/3rd-word
    references: the same bytes as decompressing each, and a cut or foreign file is not used."""
    from doctor import cachefiles
    from doctor.classify.raise_store import Store
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    plain = Store.open(rs.DATA)
    want = {b: plain._decompress(b) for b in range(0, plain.n, 7)}
    first = Store.open(rs.DATA)
    first._map_raw(write=True)   # writes the file and maps it
    path = cachefiles.path_of(cachefiles.RAW_SITES, first._raw_key)
    assert first._raw is not None and os.path.getsize(path) > len(plain._data)
    again = Store.open(rs.DATA)
    again._map_raw(write=False)
    assert again._raw is not None
    for b, text in want.items():
        assert again.bucket(b)._lines == text.split(b"\n")
    # the same lookups through a mapped store and a plain one
    for text in ("Timed out waiting 20000ms for send operation to complete",
                 "[/__w/1/s/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 20000ms for "
                 "send operation to co", "expected all tensors to be on the same dev"):
        assert rs.lookup(text, idx=rs.Index(again)) == rs.lookup(text, idx=rs.Index(Store.open(rs.DATA)))
    # a file cut short is not used (and not written over by a reader that does not write)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 1)
    cut = Store.open(rs.DATA)
    cut._map_raw(write=False)
    assert cut._raw is None
    cut._map_raw(write=True)     # written anew
    assert cut._raw is not None and cut.bucket(7)._lines == plain._decompress(7).split(b"\n")


def test_a_message_that_runs_on_inside_a_hole_is_not_a_cut_of_that_template():
    # vLLM's find_library raises "Cannot find {any} in the system."; LLaMA-Factory's loader raises "Cannot find valid
    # samples, check `data/README.md` for the data format.": the hole took the whole rest of the message, which never
    # reaches " in the system.", so it must not be reported as vLLM's message cut short (the index holds
    # LLaMA-Factory's own site, which is the match)
    from doctor.classify.raise_sites import _literal_reached, lookup
    msg = "Cannot find valid samples, check `data/README.md` for the data format."
    assert _literal_reached("Cannot find {any} in the system.", msg) == len("Cannotfind")
    found = lookup(f"ValueError: {msg}")
    assert all(m.score < 0.8 for m in found if m.package != "llamafactory")
    assert found[0].package == "llamafactory" and found[0].module.endswith("/data/loader.py") and not found[0].cut
    # really cut short inside the next literal part: that part's start counts
    assert _literal_reached("Cannot find {any} in the system.", "Cannot find libcuda in the sys") == 18
    # another release's wording after a long common start (transformers' accelerate requirement, 4.3x vs later): the
    # start it shares counts, and the site is still told
    old = ("ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: Please run "
           "`pip install transformers[torch]` or `pip install accelerate -U`")
    best = lookup(old)[0]
    assert best.package == "transformers" and best.score >= 0.8


def _top(line):
    found = rs.lookup(line)
    assert found, line
    return found[0]


def test_bitsandbytes_loader_wording_is_placed_in_bitsandbytes():
    # bitsandbytes 0.46.1 bitsandbytes/cextension.py get_native_library, read in its manylinux wheel:
    #     raise RuntimeError(f"Configured CUDA binary not found at {cuda_binary_path}")
    top = _top("RuntimeError: Configured CUDA binary not found at "
               "/opt/conda/lib/python3.11/site-packages/bitsandbytes/libbitsandbytes_cuda128.so")
    assert (top.package, top.module, top.where) == ("bitsandbytes", "bitsandbytes/cextension.py", "get_native_library")
    assert top.score >= 0.8


def test_datasets_wordings_are_placed_in_datasets():
    # datasets 4.8.5 datasets/arrow_dataset.py Dataset.map, read in the wheel:
    #     raise ValueError(f"Column to remove {list(missing_columns)} not in the dataset. Current columns in the
    #     dataset: {self._data.column_names}")
    top = _top('ValueError: Column to remove ["text"] not in the dataset. Current columns in the dataset: '
               "['prompt', 'solution']")
    assert (top.package, top.module, top.where) == ("datasets", "datasets/arrow_dataset.py", "Dataset.map")
    # datasets 4.8.5 datasets/builder.py ArrowBasedBuilder._prepare_split_single (and GeneratorBasedBuilder's):
    #     raise DatasetGenerationError("An error occurred while generating the dataset") from e
    found = rs.lookup("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset")
    best = [m for m in found if m.score >= found[0].score - 1e-9]
    assert {(m.package, m.module, m.where.rsplit(".", 1)[-1]) for m in best} == {
        ("datasets", "datasets/builder.py", "_prepare_split_single")}   # not the stale builder.bak.py of 2.14-2.20
    # datasets 4.8.5 datasets/load.py load_from_disk: raise FileNotFoundError(f"Directory {dataset_path} not found")
    top = _top("FileNotFoundError: Directory /data/grpo/processed not found")
    assert (top.package, top.where) == ("datasets", "load_from_disk")
    # torch's C++ tensor constructor says "too many dimensions 'str'"; datasets' copy of webdataset's _tenbin.py
    # ("too many dimensions") is left out of the index so that it is not named for it
    assert all(m.package != "datasets" for m in rs.lookup("ValueError: too many dimensions 'str'"))


def test_safetensors_python_wording_is_placed_in_safetensors():
    # safetensors 0.7.0 py_src/safetensors/torch.py _flatten (save_file of tied weights), read in the sdist:
    #     raise RuntimeError(f"""
    #         Some tensors share memory, this will lead to duplicate memory on disk and potential differences when
    #         loading them again: {failing}.
    #         A potential way to correctly save your model is to use `save_model`. ...""")
    # (0.8.0 raises it from _evaluate_tensors_for_save); printed with its message on the lines under the type
    text = ("RuntimeError: \n            Some tensors share memory, this will lead to duplicate memory on disk and "
            "potential differences when loading them again: [{'lm_head.weight', 'model.embed_tokens.weight'}].\n"
            "            A potential way to correctly save your model is to use `save_model`.\n"
            "            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors\n")
    found = rs.lookup(text)
    best = [m for m in found if m.score >= found[0].score - 1e-9]
    assert {(m.package, m.module, m.where) for m in best} == {
        ("safetensors", "safetensors/torch.py", "_flatten"),
        ("safetensors", "safetensors/torch.py", "_evaluate_tensors_for_save")}
    # the header errors are raised by the Rust binding (bindings/python/src/lib.rs): not indexed
    assert not [m for m in rs.lookup("safetensors_rust.SafetensorError: Error while deserializing header: "
                                     "MetadataIncompleteBuffer") if m.score >= 0.8]


def test_flash_attn_build_and_interface_wordings_are_placed_in_flash_attn():
    # flash-attn 2.8.3.post2 sdist setup.py, at module level (what a source build by `pip install flash-attn` runs):
    #     if bare_metal_version < Version("11.7"):
    #         raise RuntimeError("FlashAttention is only supported on CUDA 11.7 and above.  "
    #                            "Note: make sure nvcc has a supported version by running nvcc -V.")
    top = _top("RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note: make sure nvcc has a "
               "supported version by running nvcc -V.")
    assert (top.package, top.module, top.where, top.versions) == ("flash-attn", "setup.py", "<module>", "2.7-2.8")
    # flash-attn 2.8.3.post2 flash_attn/flash_attn_interface.py flash_attn_with_kvcache:
    #     assert k_cache.stride(-1) == 1, "k_cache must have contiguous last dimension"
    top = _top("AssertionError: k_cache must have contiguous last dimension")
    assert (top.package, top.module, top.where) == ("flash-attn", "flash_attn/flash_attn_interface.py",
                                                    "flash_attn_with_kvcache")


def test_verl_wordings_are_placed_in_verl_and_its_copies_of_vllm_are_not():
    # verl 0.9.1 verl/protocol.py DataProto.chunk, read in the wheel:
    #     assert len(self) % chunks == 0, (
    #         f"only support equal chunk. Got size of DataProto {len(self)} and chunk {chunks}.")
    top = _top("AssertionError: only support equal chunk. Got size of DataProto 1000 and chunk 8.")
    assert (top.package, top.module, top.where) == ("verl", "verl/protocol.py", "DataProto.chunk")
    # verl 0.9.1 verl/utils/reward_score/__init__.py default_compute_score:
    #     raise NotImplementedError(f"Reward function is not implemented for {data_source=}")
    top = _top("NotImplementedError: Reward function is not implemented for data_source='my_math'")
    assert (top.package, top.where) == ("verl", "default_compute_score")
    # verl's utils/model.py raises vLLM's registry wording for its Megatron models: dropped from verl's sites
    # (raise_index_packages.toml), so a vLLM log is still placed at vLLM's registry alone
    found = rs.lookup("ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported "
                      "architectures: ['LlamaForCausalLM', 'Qwen2ForCausalLM']")
    assert found[0].package == "vllm" and "verl" not in {m.package for m in found if m.score >= 0.8}


def test_a_message_retyped_by_hand_is_looked_up_as_its_template_a_little_lower():
    from doctor.classify.raise_sites import lookup
    exact = lookup("ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a "
                   "`device_map`.")
    quoted = lookup("ValueError: DeepSpeed Zero-3 is not compatible with 'low_cpu_mem_usage=True' or with passing a "
                    "'device_map'.")
    slipped = lookup("ValueError: DeepSpeed Zreo-3 is not compatible with 'low_cpu_mem_usage=True' or with passing "
                     "a 'device_map'.")
    assert exact and quoted and slipped
    assert exact[0].where == quoted[0].where == slipped[0].where == "PreTrainedModel.from_pretrained"
    assert exact[0].score > quoted[0].score > slipped[0].score >= 0.85
    # two slips in a short message are not put right: too little of it is the template's
    assert lookup("ValueError: Zreo-3 nto compatible") == []


def test_typing_slips_of_a_word():
    from doctor.checks.fallback.named import builtin_type
    from doctor.classify.slips import one_slip
    assert one_slip("Zreo", "Zero") and one_slip("Valie", "Value") and one_slip("Vaue", "Value")
    assert one_slip("Valuee", "Value") and not one_slip("Value", "Value") and not one_slip("Zrreo", "Zero")
    assert builtin_type("ValieError") == "ValueError" and builtin_type("KeyErorr") == "KeyError"
    assert builtin_type("ConfigError") == "ConfigError" and builtin_type("torch.ValieError") == "torch.ValieError"
