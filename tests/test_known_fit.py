"""doctor/known/fit.py: a known thread's resolution becomes a fix step only when the run does not contradict it."""
from __future__ import annotations

from doctor.known.fit import fits, why_not
from doctor.known.index import Match
from doctor.model import Evidence, Finding, RaisedBy, Severity


def _m(category="batch-divisibility", resolution="", title="", versions="", exact=False, basis="raise-site"):
    return Match("o/r#1", title, "closed", category, versions, resolution, "maintainer", 0.9, exact, basis=basis)


def _f(category="batch-divisibility", message="", evidence="x", raised_by=()):
    return Finding("GD1", "s", category, Severity.error, "t", message, evidence=(Evidence("log", 1, evidence),),
                   raised_by=raised_by)


def test_condition_contradicted_by_the_value_read_from_the_log():
    m = _m(resolution="num_generations=1 is not valid for GRPO (a group needs at least 2 completions).")
    assert "num_generations=1" in why_not(m, _f(message="not a multiple of num_generations 8"), {})
    assert fits(m, _f(message="num_generations 1 gives groups of one"), {})
    assert fits(m, _f(message="no value here"), {})  # nothing read: not contradicted
    assert not fits(m, _f(), {"args": {"num_generations": 4}})


def test_category_must_be_the_findings_unless_the_signature_is_exact():
    assert not fits(_m(category="hang-at-start"), _f(category="nccl-timeout"), {})
    assert fits(_m(category="hang-at-start", exact=True), _f(category="nccl-timeout"), {})


def test_an_upgrade_the_run_already_has_or_of_a_package_not_involved():
    m = _m(category="nccl-timeout", resolution="A maintainer said the timeout was fixed in vLLM 0.3.2: upgrade vLLM.",
           versions="vllm 0.3.1")
    watchdog = _f(category="nccl-timeout", evidence="Watchdog caught collective operation timeout: WorkNCCL(...)")
    assert "nothing of this failure involves" in why_not(m, watchdog, {"framework": "ms-swift"})
    in_vllm = _f(category="nccl-timeout", evidence="File vllm/worker.py line 3")
    # ms-swift's README floor (vllm >= 0.5.1) is past 0.3.2; a framework not told gives no floor
    assert "older than the run's vllm" in why_not(m, in_vllm, {"framework": "ms-swift", "framework_source": "text"})
    assert fits(m, in_vllm, {"framework": None, "framework_source": "unknown"})
    assert not fits(m, in_vllm, {"versions": {"vllm": "0.8.5"}})
    up = _m(category="argument-error-other", resolution="Use swift main and upgrade vLLM to 0.7.3, which supports it.")
    raised = _f(category="argument-error-other", raised_by=(RaisedBy("vllm", "0.6", "m", "f", "RuntimeError"),))
    assert fits(up, raised, {"framework": "ms-swift", "framework_source": "text"})
    assert not fits(up, raised, {"versions": {"vllm": "0.7.3"}})


def test_a_known_fix_is_said_in_the_run_framework_or_left_out(monkeypatch):
    from doctor import known
    m = _m(category="cuda-oom", resolution="Sync the weights in chunks with --move_model_batches 8.")
    monkeypatch.setattr(known, "for_finding", lambda f: [m])
    f = _f(category="cuda-oom")
    assert known.fix_lines(f, {"framework": "ms-swift", "framework_source": "text"})
    assert known.fix_lines(f, {"framework": "trl", "framework_source": "frames"}) == []  # no trl equivalent
    m2 = _m(category="cuda-oom", resolution="Set --vllm_gpu_memory_utilization 0.5.")
    monkeypatch.setattr(known, "for_finding", lambda f: [m2])
    (line,) = known.fix_lines(f, {"framework": "trl", "framework_source": "frames"})
    assert "GRPOConfig(vllm_gpu_memory_utilization=0.5)" in line


def test_a_transport_the_run_turns_off_or_a_setting_it_has_is_no_known_fix():
    # NVIDIA/nccl#2076's resolution (faulty InfiniBand links) against a run exporting NCCL_IB_DISABLE=1
    ib = _m(category="nccl-timeout", resolution="Here some nodes had faulty InfiniBand links; the run worked once the "
            "cluster's IB problems were repaired.", versions="NCCL 2.21.5, multi-node DDP over InfiniBand")
    f = _f(category="nccl-timeout")
    assert "InfiniBand transport" in why_not(ib, f, {"env": {"NCCL_IB_DISABLE": "1"}})
    assert fits(ib, f, {"env": {"NCCL_IB_DISABLE": "0"}}) and fits(ib, f, {})
    p2p = _m(category="nccl-timeout", resolution="Set NCCL_P2P_DISABLE=1 on these machines.")
    assert "already has" in why_not(p2p, f, {"env": {"NCCL_P2P_DISABLE": "1"}})
    assert fits(p2p, f, {"env": {}})
