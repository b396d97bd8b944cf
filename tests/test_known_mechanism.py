"""doctor/known/mechanism.py: a thread's resolution is a "Known fix" only for the same failure mechanism (the same raise
site, or the same error in the same phase), when its conditions hold in this run and it is a whole sentence; every
other thread is a similar thread with its similarity (issue 29 point 4)."""
from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest
from conftest import known_thread

from doctor import known
from doctor.analyze import analyze
from doctor.known import mechanism as mech
from doctor.model import Evidence, Finding, RaisedBy, Report, Severity
from doctor.render import html, jsonr, markdown, text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
# trl's GRPOTrainer check (trl 0.15-0.16 GRPOTrainer.__init__, in the raise-site index)
BATCH = ("The global train batch size (1 x 1) must be evenly divisible by the number of generations per prompt (8). "
         "Given the current train batch size, the valid values for the number of generations are: [].")
# vLLM's SamplingParams check (vllm sampling_params.py SamplingParams._verify_args)
MAX_TOKENS = "max_tokens must be at least 1, got -239."
RESOLUTION = "Raise per_device_train_batch_size so that the global batch is a multiple of num_generations."
_thread = partial(known_thread, resolution=RESOLUTION, category="batch-divisibility", versions="trl 0.16",
                  confidence="maintainer")


def _finding(ev: str, category: str = "batch-divisibility", raised_by: tuple[RaisedBy, ...] = (),
             message: str = "msg") -> Finding:
    return Finding("GD101", "slug", category, Severity.error, "Title", message, fix=("own fix",),
                   evidence=(Evidence("log.txt", 3, ev),), raised_by=raised_by)


TRL_SITE = RaisedBy("trl", "0.15-0.16", "trl/trainer/grpo_trainer.py", "GRPOTrainer.__init__", "ValueError")
TRL_RUN = {"framework": "trl", "framework_source": "frames"}
SWIFT_RUN = {"framework": "ms-swift", "framework_source": "text"}


def test_same_raise_site_and_holding_conditions_give_a_known_fix(index_of):
    index_of(_thread("huggingface/trl#1", "ValueError", BATCH))
    f = _finding(f"[rank0]: ValueError: {BATCH}", raised_by=(TRL_SITE,))
    (m,) = known.for_finding(f)
    assert m.basis == mech.RAISE_SITE
    (line,) = known.fix_lines(f, TRL_RUN)
    assert line.startswith("Known fix (huggingface/trl#1, raised at the same place,") and RESOLUTION in line
    doc = json.loads(jsonr.render(Report("X", [], TRL_RUN, [f])))["findings"][0]
    assert doc["known_issues"][0]["basis"] == "raise-site" and doc["fix"][-1] == line


def test_text_similar_thread_with_another_raise_site_is_only_a_similar_thread(index_of):
    # the thread's error reads like the run's but is raised elsewhere (vLLM's SamplingParams, not trl's trainer)
    index_of(_thread("vllm-project/vllm#2", "ValueError", MAX_TOKENS + " " + BATCH, category="batch-divisibility"))
    f = _finding(f"[rank0]: ValueError: {BATCH}", raised_by=(TRL_SITE,))
    (m,) = known.for_finding(f)
    assert mech.thread_sites(m) and not mech.thread_sites(m) & mech.finding_sites(f)
    assert m.basis == mech.SIMILARITY
    assert known.fix_lines(f, TRL_RUN) == [] and known.similar(f) == [m] and known.same_failure(f) == []
    out = text.render(Report("X", [], TRL_RUN, [f]), width=200)
    assert "Known fix" not in out and "similar threads" in out and f"similarity {m.score:.2f}" in out
    assert RESOLUTION not in out  # what fixed another failure is not printed as advice
    md = markdown.render(Report("X", [], TRL_RUN, [f]))
    assert "Known fix" not in md and "Similar threads" in md


def test_same_raise_site_in_another_framework_is_no_known_fix(index_of):
    index_of(_thread("modelscope/ms-swift#3", "ValueError", BATCH, versions="ms-swift 3.2"))
    f = _finding(f"ValueError: {BATCH}", raised_by=(TRL_SITE,))
    (m,) = known.for_finding(f)
    assert m.basis == mech.RAISE_SITE and mech.thread_framework(m) == "ms-swift"
    assert known.fix_lines(f, TRL_RUN) == []
    assert "ms-swift" in known.why_no_fix(m, f, TRL_RUN)
    assert known.fix_lines(f, SWIFT_RUN)  # the thread's own framework


def test_a_shared_library_raise_site_crosses_frameworks(index_of):
    index_of(_thread("modelscope/ms-swift#4", "ValueError", MAX_TOKENS, category="argument-error-other",
                     resolution="The prompt was longer than max_model_len: raise max_model_len or shorten prompts.",
                     versions="ms-swift 3.8"))
    site = RaisedBy("vllm", "0.6-0.13", "vllm/sampling_params.py", "SamplingParams._verify_args", "ValueError")
    f = _finding(f"ValueError: {MAX_TOKENS}", "argument-error-other", raised_by=(site,))
    (m,) = known.for_finding(f)
    assert m.basis == mech.RAISE_SITE
    assert known.fix_lines(f, TRL_RUN)  # raised by vLLM under either trainer


@pytest.mark.parametrize("resolution", [
    "Gather and sync the weights in smaller chunks with --move_model_batches (e.g.",
    "Give a non-empty eval split large enough, or disable eval_str",
    "and then it worked after raising the batch size.",
    "Same as above.",
    "See the linked PR.",
    "This fixed it.",
    "The fix is matched above in the thread.",
    "https://github.com/huggingface/trl/pull/1234",
])
def test_a_cut_or_outside_referring_resolution_is_never_a_bullet(index_of, resolution):
    assert mech.whole_sentence(resolution)
    index_of(_thread("huggingface/trl#5", "ValueError", BATCH, resolution=resolution))
    f = _finding(f"ValueError: {BATCH}", raised_by=(TRL_SITE,))
    (m,) = known.for_finding(f)
    assert m.basis == mech.RAISE_SITE and known.fix_lines(f, TRL_RUN) == []
    assert known.same_failure(f) == [m]  # still listed as a thread about the same failure


@pytest.mark.parametrize("resolution", [
    RESOLUTION,
    "num_generations=1 is not valid for GRPO (a group needs at least 2 completions); the merged PR raises an error.",
    "vLLM 0.8 switched to the V1 engine by default; set VLLM_USE_V1=0 (or upgrade trl).",
    "This error meant generation returned no completions; look for the generation backend's own failure.",
])
def test_whole_sentences_pass(resolution):
    assert mech.whole_sentence(resolution) == ""


def test_no_raise_site_same_error_and_phase(index_of):
    oom = "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"
    index_of(_thread("vllm-project/vllm#6", "RuntimeError", oom, category="vllm-oom-or-kv-cache", versions="vllm 0.7",
                     title="wake up OOM", resolution="Free memory before wake_up: lower gpu_memory_utilization."))
    f = _finding(f"RuntimeError: {oom.replace('62', '70')}", "vllm-oom-or-kv-cache", message="OOM at wake_up.")
    (m,) = known.for_finding(f)
    assert m.exact and not mech.finding_sites(f) and not mech.thread_sites(m)
    assert m.basis == mech.TYPE_COMPONENT_PHASE and known.fix_lines(f, SWIFT_RUN)
    # the thread's failure is at wake-up (weight sync); a run that shows only its rollout is not that failure
    g = _finding(f"RuntimeError: {oom}", "vllm-oom-or-kv-cache", message="vLLM ran out of memory during rollout.")
    (m2,) = known.for_finding(g)
    assert m2.basis == mech.SIMILARITY and known.fix_lines(g, SWIFT_RUN) == []


def test_html_shows_known_fix_and_similar_threads(index_of):
    index_of(_thread("huggingface/trl#1", "ValueError", BATCH),
             _thread("vllm-project/vllm#2", "ValueError", MAX_TOKENS + " " + BATCH))
    f = _finding(f"ValueError: {BATCH}", raised_by=(TRL_SITE,))
    out = html.render(Report("X", [], TRL_RUN, [f]))
    assert "Known fix (huggingface/trl#1" in out and "similar threads" in out and "vllm-project/vllm#2" in out


# ------------------------------------------------------------------ no sentence addressed to developers
# what a maintainer writes to another maintainer ("matched above" meant: by an earlier entry of a table)
DEV_PHRASES = re.compile(r"(?i)\bmatched (?:above|below|here|earlier)\b|\bis matched by\b|\bthis (?:entry|table)\b(?! point)|"
                         r"\b(?:entry|rule|table) above\b|\bTODO\b|\bFIXME\b|\bXXX\b|\bgolden\b|"
                         r"\braise-site index\b|\bstructure table\b|\bfixer\b|"
                         # the tool's own workings said as if to its authors
                         r"\bstack frames were read\b|\bdeepest frames\b|\bwords read most like\b|\bnot from its frames\b|"
                         r"\bwording without the type's name\b")


def _cases() -> list[Path]:
    out = [p for p in sorted((FIX / "logs").iterdir()) if p.is_dir()]
    for d in ("devlogs", "devlogs2", "devlogs3", "devlogs5", "devlogs6", "devlogs7", "devlogs8"):
        out += [p for p in sorted((FIX / d).iterdir()) if p.is_dir()]
    return out


def test_no_report_of_the_fixtures_speaks_to_developers():
    bad = []
    for case in _cases():
        rel = str(case.relative_to(ROOT))
        rep = analyze([str(case)])
        for line in text.render(rep, width=400).splitlines():
            if str(case) in line or rel in line:  # evidence and inputs: the log's own words
                continue
            # the log's own words quoted in backticks are the input's, not the report's ("<function xxx>")
            if DEV_PHRASES.search(re.sub(r"`[^`]*`", "", line)):
                bad.append(f"{case.name}: {line.strip()[:200]}")
    assert not bad, "\n".join(bad)


def test_the_structure_table_docs_say_nothing_to_developers():
    from doctor.classify.structure import load
    assert [e.id for e in load() if DEV_PHRASES.search(e.doc)] == []


def test_the_signature_sites_cache_is_keyed_by_every_module_a_lookup_runs():
    # the cache file of the threads' signature sites (mechanism.signature_sites) is keyed by the files of SITES_CODE: a
    # process that only looks texts up must hold no other module of the package, or an edit there would go unnoticed
    import subprocess
    import sys
    code = ("import sys\nfrom doctor.known.mechanism import _sites_of\n"
            f"_sites_of({BATCH!r}); _sites_of('failed (exitcode: -11) local_rank: 5 (pid: 11514) of binary')\n"
            "_sites_of('Traceback (most recent call last):\\n  File \"x.py\", line 1, in f\\nValueError: ' + 'x' * 40)\n"
            "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'doctor')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    pkg = Path(mech.__file__).resolve().parent.parent
    held = {Path(f).resolve().relative_to(pkg).as_posix() for f in out.split()}
    assert held <= set(mech.SITES_CODE), sorted(held - set(mech.SITES_CODE))


def test_signature_sites_are_the_lookups_and_come_back_from_the_cache_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(mech, "_known", None)
    monkeypatch.setattr(mech, "_known_new", {})
    texts = [f"ValueError: {BATCH}", "failed (exitcode: -11) local_rank: 5 (pid: 11514) of binary", "short"]
    first = [mech.signature_sites(t) for t in texts]
    assert first == [mech._sites_of(t) for t in texts] and first[0]
    mech._save_known()
    monkeypatch.setattr(mech, "_known", None)
    monkeypatch.setattr(mech, "_known_new", {})
    monkeypatch.setattr(mech, "_sites_of", lambda text: pytest.fail(f"looked up again: {text}"))
    assert [mech.signature_sites(t) for t in texts] == first


def test_a_thread_about_another_kind_of_training_is_no_known_fix(index_of):
    # dev 5208: an SFT run, and LlamaFactory#7065's pre-training resolution (blocks of cutoff_len tokens) for the
    # same raise site
    index_of(_thread("huggingface/trl#1", "ValueError", BATCH, versions="trl 0.16, stage pt with a text dataset"))
    f = _finding(f"[rank0]: ValueError: {BATCH}", raised_by=(TRL_SITE,))
    assert known.fix_lines(f, {**TRL_RUN, "trainer": "sft"}) == []
    assert known.fix_lines(f, {**TRL_RUN, "trainer": "pt"}) != []
    assert known.fix_lines(f, TRL_RUN) != []      # the run's kind not told: nothing contradicts the thread
