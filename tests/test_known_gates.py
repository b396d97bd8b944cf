"""Issue 29 point 4, by mechanism: which public threads a finding lists, and when a thread's resolution is a fix.

Each test feeds the case that contradicted a sentence (grader 27's list of false sentences on devlogs9/10, and the
dev11 misses) and sees the sentence go:
- K1 (similar threads): a launcher's or wrapper's line is never matched; a similar thread must be the same exception
  type, signal and quoted name; a thread of another trainer goes also when the run's trainer is not told;
- K2 (known issues): torch elastic's and vLLM's monitors are wrappers; torch's generic shape message and a masked
  KeyError name no component; a run without a trainer gets no unresolved trainer threads;
- conditions: a resolution tied to a release the log does not show is "one candidate", not a "Known fix";
- P1 (raised by): the indexed function and range only as far as the run confirms them; a templated version is not a
  removed check.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import known_thread as _thread
from conftest import run_text

from doctor import known
from doctor.analyze import analyze
from doctor.classify import provenance
from doctor.classify import raise_sites as rs
from doctor.known import index as kindex
from doctor.known import mechanism as mech
from doctor.model import Evidence, Finding, RaisedBy, Report, Severity
from doctor.render import jsonr, markdown, text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"


def _case(n: str) -> Path:
    (case,) = [p for d in ("devlogs9", "devlogs10") for p in (FIX / d).glob(f"{n}-*")]
    return case


def _all_text(report: Report) -> str:
    return text.render(report, width=400) + markdown.render(report) + jsonr.render(report)


def _finding(*ev: str, category: str = "other", raised_by: tuple[RaisedBy, ...] = (), message: str = "m") -> Finding:
    return Finding("GD307", "slug", category, Severity.error, "Title", message, fix=("own fix",),
                   evidence=tuple(Evidence("log.txt", i + 1, t) for i, t in enumerate(ev)), raised_by=raised_by)


UNKNOWN = {"framework": None, "framework_source": "unknown"}
VLLM_ONLY = {"framework": "vllm", "framework_source": "runtime"}
SWIFT = {"framework": "ms-swift", "framework_source": "text"}


# ------------------------------------------------------------------ K1: similar threads
@pytest.mark.parametrize("line", [
    "[01:26:13] ERROR    failed (exitcode: 1) local_rank: 0 (pid: 1527604) of binary: /usr/bin/python3",
    "E0521 18:06:37.491000 2915962 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: -11) local_rank: 3 (pid: 2916310) of binary: /usr/bin/python",
    "ray.exceptions.RayTaskError(RuntimeError): ray::ActorModelRayActor.fit() (pid=17570, ip=10.126.203.73)",
    "W0622 19:47:13.438884 140373504014144 torch/distributed/elastic/multiprocessing/api.py:851] Sending process "
    "1760810 closing signal SIGTERM",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "ERROR 01-04 21:58:22 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
])
def test_a_launcher_or_wrapper_line_matches_no_thread(index_of, line):
    """1009, 1112, 1318 (open-r1#254 exit -8, ms-swift#1507 exit -11, ms-swift#7200), 1028 (a RayTaskError header),
    1109 (closing signal), 1121 (vLLM's engine-core monitor): the launcher's words are the same for every cause."""
    assert mech.launcher_line(line)
    index_of(_thread("huggingface/open-r1#254", None, "failed (exitcode: -8) local_rank: 6 (pid: 58423) of binary: "
                     "/opt/miniconda/bin/python", versions="open-r1 zero3 (2025-02)"),
             _thread("OpenRLHF/OpenRLHF#829", "ray.exceptions.RayTaskError(RuntimeError)", "ray::ActorModelRayActor.fit()"),
             _thread("modelscope/ms-swift#9788", None, "Sending process 3681211 closing signal SIGHUP"),
             _thread("vllm-project/vllm#21728", None, "Engine core proc EngineCore_0 died unexpectedly, shutting down "
                     "client.", resolution="The client now shuts down when the engine core dies.",
                     confidence="maintainer"))
    f = _finding(line)
    assert known.for_finding(f) == [] and known.similar(f, UNKNOWN) == [] and known.fix_lines(f, UNKNOWN) == []


def test_the_cause_beside_a_launcher_line_is_still_looked_up(index_of):
    index_of(_thread("vllm-project/vllm#1", "ValueError", "The quantization method fp8 is not supported for the "
                     "current GPU. Minimum capability: 90. Current capability: 86.", category="other"))
    f = _finding("failed (exitcode: 1) local_rank: 0 (pid: 1) of binary: python",
                 "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 90. "
                 "Current capability: 80.")
    assert [m.thread for m in known.for_finding(f)] == ["vllm-project/vllm#1"]


def test_signals_and_exit_codes_are_one_name():
    assert mech.codes("failed (exitcode: -11) local_rank: 5") == {"SIGSEGV"}
    assert mech.codes("failed (exitcode: -8) local_rank: 6") == {"SIGFPE"}
    assert mech.codes("exit status 137") == {"SIGKILL"} and mech.codes("Killed: signal 9") == {"SIGKILL"}
    assert mech.codes("exitcode: 1") == {"exit 1"}


def test_a_similar_thread_must_name_the_same_argument():
    """1003: PPOTrainer.__init__() missing 'reward_model' and 'train_dataset' read like datasets' Value.__init__()
    missing 'dtype' (datawhalechina/unlock-deepseek#30) and peft's LoraModel missing 'adapter_name'."""
    f = _finding("TypeError: PPOTrainer.__init__() missing 2 required positional arguments: 'reward_model' and "
                 "'train_dataset'")
    for sig in ("Value.__init__() missing 1 required positional argument: 'dtype'",
                "__init__() missing 1 required positional argument: 'adapter_name'"):
        m = kindex.Match("x/y#1", "t", "open", "other", "", "", "unresolved", 0.6, False, (("TypeError", sig),),
                         mech.SIMILARITY)
        assert mech.same_kind(m, f) == "no quoted name in common"
    same = kindex.Match("x/y#2", "t", "open", "other", "", "", "unresolved", 0.6, False,
                        (("TypeError", "PPOTrainer.__init__() missing 1 required positional argument: 'reward_model'"),),
                        mech.SIMILARITY)
    assert mech.same_kind(same, f) == ""


def test_a_similar_thread_must_be_the_same_exception_type(index_of):
    index_of(_thread("x/y#1", "ValueError", "CUDA error: unspecified launch failure while fitting the actor model"))
    f = _finding("RuntimeError: CUDA error: unspecified launch failure while fitting the actor model")
    (m,) = known.for_finding(f)
    assert mech.same_kind(m, f) == "another exception type" and known.similar(f) == []


def test_a_trainer_thread_is_left_out_when_the_run_does_not_show_that_trainer(index_of):
    """1124: a trl-based project's thread (yflyzhang/simpleR1#1, its trainer named only in its versions) for an
    ms-swift job; and with the trainer not told, a trainer's thread stays only when the run shows that trainer."""
    watchdog = ("ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
                "collectives.")
    index_of(_thread("yflyzhang/simpleR1#1", None, watchdog, versions="trl-based GRPO, GPUs without NVLink",
                     category="hang-mid-training"))
    f = _finding(f"[rank11]:[E423 18:59:02.199810045 ProcessGroupNCCL.cpp:1890] {watchdog}")
    (m,) = known.for_finding(f)
    assert mech.thread_framework(m) == "trl"
    assert known.similar(f, SWIFT) == [] and known.similar(f, UNKNOWN) == []
    assert known.similar(f, {"framework": None, "framework_source": "unknown", "command": "trl vllm-serve"}) == [m]


@pytest.mark.parametrize("n, gone", [
    ("1003", ("datawhalechina/unlock-deepseek#30",)),
    ("1009", ("huggingface/open-r1#254", "modelscope/ms-swift#1507", "modelscope/ms-swift#7200")),
    ("1011", ("MakazhanAlpamys/Soup#565", "modelscope/ms-swift#5119")),
    ("1028", ("OpenRLHF/OpenRLHF#829",)),
    ("1124", ("yflyzhang/simpleR1#1",)),
    ("1016", ("huggingface/trl#3523",)),
    ("1109", ("modelscope/ms-swift#9788",)),
    ("1112", ("huggingface/open-r1#254", "modelscope/ms-swift#7200", "modelscope/ms-swift#1507")),
    ("1121", ("modelscope/ms-swift#7933",)),
])
def test_graded_cases_list_none_of_the_unrelated_threads(n, gone):
    out = _all_text(analyze([str(_case(n))]))
    assert not [t for t in gone if t in out]


# ------------------------------------------------------------------ K2: known issues (the same failure mechanism)
def test_launcher_and_engine_monitor_sites_are_wrappers():
    assert rs.is_wrapper("torch/distributed/elastic/multiprocessing/api.py", "SubprocessContext._poll")
    assert rs.is_wrapper("torch/distributed/elastic/multiprocessing/api.py", "SubprocessContext._close")
    assert rs.is_wrapper("vllm/v1/engine/core_client.py", "MPClient.start_engine_core_monitor.monitor_engine_cores")
    site = RaisedBy("torch", "2.13", "torch/distributed/elastic/multiprocessing/api.py", "SubprocessContext._poll",
                    "error")
    f = _finding("Received 1 death signal, shutting down workers", raised_by=(site,))
    m = kindex.Match("x/y#1", "t", "open", "other", "", "", "unresolved", 0.9, True,
                     (("", "Received 1 death signal, shutting down workers"),))
    assert mech.basis(m, f) == mech.SIMILARITY


def test_torch_shape_message_and_a_masked_key_name_no_component(index_of):
    """1011: ms-swift#5119's sequence-parallel fix matched an Unsloth run on torch's `The size of tensor a (N) must
    match`; 1324: a Triton keyword KeyError and a weight-name KeyError are both `KeyError: <q>` once masked."""
    assert mech.generic("The size of tensor a (25) must match the size of tensor b (24) at non-singleton dimension 1")
    assert mech.generic("'layers.0.self_attn.qkv_proj.base_layer.weight'")
    assert not mech.generic("CUDA out of memory. Tried to allocate 2.00 GiB")
    index_of(_thread("modelscope/ms-swift#5119", "RuntimeError", "The size of tensor a (98275) must match the size of "
                     "tensor b (2049) at non-singleton dimension 1", category="other", confidence="maintainer",
                     resolution="Upgrade ms-swift, or enable padding_free on older versions."),
             _thread("vllm-project/vllm#16676", "KeyError", "'Keyword argument maxnreg was specified but unrecognised'",
                     category="other", confidence="confirmed", versions="vLLM 0.8.4 (V1 engine) with LoRA enabled",
                     resolution="Add the maxnreg parameter to the LoRA Triton kernel definitions."))
    shape = _finding("RuntimeError: The size of tensor a (25) must match the size of tensor b (24) at non-singleton "
                     "dimension 1")
    key = _finding("KeyError: 'layers.0.self_attn.qkv_proj.base_layer.weight'")
    for f in (shape, key):
        assert all(m.basis == mech.SIMILARITY for m in known.for_finding(f))
        assert known.same_failure(f, UNKNOWN) == [] and known.fix_lines(f, UNKNOWN) == []


def test_a_run_without_a_trainer_gets_no_unresolved_trainer_threads(index_of):
    """1016 (trl#3523), 1121 (ms-swift#7933): a plain vLLM server shares a vLLM raise site with a trainer's
    unresolved thread; listed only for a run that shows that trainer."""
    oom = ("CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering "
           "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    index_of(_thread("huggingface/trl#3523", "RuntimeError", oom, versions="trl 0.18.0.dev0, vLLM 0.8.5.post1",
                     category="vllm-oom-or-kv-cache"))
    f = _finding(f"RuntimeError: {oom}", category="vllm-oom-or-kv-cache")
    (m,) = known.for_finding(f)
    assert m.basis in mech.MECHANISM
    assert known.same_failure(f, VLLM_ONLY) == [] and known.json_items(f, VLLM_ONLY) == []
    assert known.same_failure(f, {"framework": "trl", "framework_source": "frames"}) == [m]


# ------------------------------------------------------------------ conditions: known fix or one candidate
REGRESSION = ("A trl 0.25 regression: conversational prompts sent to vLLM were no longer cut to max_prompt_length; "
              "fixed in a later trl release (meanwhile shorten prompts or raise the vLLM max model length).")
PROMPT = ("The decoder prompt (length 5951) is longer than the maximum model length of 4096. Make sure that "
          "`max_model_len` is no smaller than the number of text tokens.")


@pytest.fixture
def trl_4358(index_of):
    index_of(_thread("huggingface/trl#4358", "ValueError", PROMPT.replace("5951", "3353").replace("4096", "2560"),
                     resolution=REGRESSION, category="argument-error-other", versions="trl 0.25.0",
                     confidence="maintainer", title="max_prompt_length does not truncate prompts (since v0.25.0)"))
    return _finding(f"ValueError: {PROMPT}", category="argument-error-other")


def test_a_thread_tied_to_a_release_the_log_does_not_show_is_one_candidate(trl_4358):
    """dev11 1327: 'grpo and vllm', no trl version: trl#4358's regression is one candidate, not the known fix."""
    f = trl_4358
    (m,) = known.for_finding(f)
    assert ("trl", "0.25", False) in __import__("doctor.known.fit", fromlist=["stated"]).stated(m)
    (line,) = known.fix_lines(f, VLLM_ONLY)
    assert line.startswith("One candidate, not shown to apply to this run (huggingface/trl#4358, ")
    assert "trl 0.25" in line and "Known fix" not in line and line.endswith(REGRESSION)
    (line,) = known.fix_lines(f, {"framework": "trl", "framework_source": "frames"})
    assert line.startswith("One candidate") and "this log shows no trl version" in line


def test_a_thread_tied_to_the_runs_release_is_a_known_fix_and_to_another_none(trl_4358):
    f = trl_4358
    run = {"framework": "trl", "framework_source": "frames", "versions": {"trl": "0.25.1"}}
    (line,) = known.fix_lines(f, run)
    assert line.startswith("Known fix (huggingface/trl#4358, ")
    run = {"framework": "trl", "framework_source": "frames", "versions": {"trl": "0.19.0"}}
    assert known.fix_lines(f, run) == []
    (m,) = known.for_finding(f)
    assert "the run has trl 0.19.0" in known.why_no_fix(m, f, run)
    # still listed as a thread about the same failure, with why its answer is not this run's instead of the answer
    (listed,) = known.same_failure(f, run)
    assert listed.thread == m.thread and REGRESSION not in known.describe(listed)
    assert listed.resolution == "its answer does not fit this run (the thread is about trl 0.25, the run has trl 0.19.0)"
    assert known.same_failure(f, {**run, "versions": {"trl": "0.25.1"}}) == [m]


def test_unresolved_threads_never_become_fix_bullets(index_of):
    index_of(_thread("huggingface/trl#3569", "ValueError", PROMPT, category="argument-error-other",
                     versions="trl 0.18.0"))
    f = _finding(f"ValueError: {PROMPT}", category="argument-error-other")
    assert known.for_finding(f) and known.fix_lines(f, {"framework": "trl", "framework_source": "frames"}) == []


# ------------------------------------------------------------------ P1: raised by
def test_raised_by_says_what_the_run_confirms():
    rb = RaisedBy("ms-swift", "3.0-3.2", "swift/llm/template/base.py", "Template._encode", "MaxLengthError", "<=3.2")
    assert rb.describe() == "raised by ms-swift <=3.2 `Template._encode` (swift/llm/template/base.py)"
    assert RaisedBy(*rb.to_json().values(), scope="function").describe() == \
        "raised by ms-swift `Template._encode` (swift/llm/template/base.py)"
    assert RaisedBy(*rb.to_json().values(), scope="package").describe() == "this message is raised by ms-swift"


def test_scope_reads_the_frames_and_the_printed_version():
    site = rs.SiteMatch("vllm", "0.6-0.9", "vllm/config.py", "VllmConfig._get_quantization_config", "ValueError", "t")
    # a traceback whose frames are other functions (vLLM 0.4's worker and model runner): the package only
    assert provenance.scope(site, "<=0.9", ("execute_method", "load_model"), "", {}) == "package"
    assert provenance.scope(site, "<=0.9", ("load_model", "_get_quantization_config"), "", {}) == "function"
    assert provenance.scope(site, "<=0.9", ("_get_quantization_config",), "", {"vllm": "0.8.5"}) == ""
    assert provenance.scope(site, "0.6-0.9", ("_get_quantization_config",), "", {"vllm": "0.11.0"}) == "package"
    # no traceback: a log line that names the site's file confirms it
    assert provenance.scope(site, "<=0.9", (), "ERROR [config.py:312] bad", {}) == "function"
    assert provenance.scope(site, "<=0.9", (), "ValueError: bad", {}) == "package"


@pytest.mark.parametrize("n, false, now", [
    ("1015", "`VllmConfig._get_quantization_config`", "this message is raised by vllm"),
    ("1018", "`_ModelRegistry._raise_for_unsupported`", "this message is raised by vllm"),
    ("1020", "transformers 4.52-5.24", "raised by transformers `GenerationConfig.save_pretrained`"),
    ("1023", "`Template._encode` ", "raised by ms-swift `Template._encode_truncated` (swift/llm/template/base.py)"),
    ("1024", "transformers 4.52-5.24", "this message is raised by transformers"),
])
def test_graded_raised_by_lines_say_no_more_than_the_log(n, false, now):
    out = text.render(analyze([str(_case(n))]), width=400)
    assert false not in out and now in out


def test_a_templated_version_is_not_a_removed_check():
    """dev11 1307: transformers 4.45-4.47 print `accelerate>={ACCELERATE_MIN_VERSION}` (an f-string's doubled
    braces), 4.48 on fill the version in: the same check, so no 'upgrading may remove the failure'."""
    a = ("Using the `Trainer` with `PyTorch` requires `accelerate>={any}`: Please run `pip install transformers[torch]` "
         "or `pip install 'accelerate>={{ACCELERATE_MIN_VERSION}}'`")
    b = ("Using the `Trainer` with `PyTorch` requires `accelerate>={any}`: Please run `pip install transformers[torch]` "
         "or `pip install 'accelerate>={any}'`")
    assert rs.same_check(a) == rs.same_check(b)
    assert rs.same_check("requires accelerate>=0.20.1") == rs.same_check("requires accelerate>={any}")
    line = ("ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: Please run `pip install "
            "transformers[torch]` or `pip install accelerate -U`")
    # the report says nothing of upgrades removing it (no such claim is made from the wording index at all)
    assert not any("may remove the failure" in x for f in run_text(line + "\n") for x in (f.message, *f.fix))
    (m,) = [m for m in rs.lookup(line) if m.where == "TrainingArguments._setup_devices"]
    assert rs.raised_after(m, "4.48")
