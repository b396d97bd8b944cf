"""Known issues (doctor/known): normalisation, matching, the shipped index's contract, and the renderers.

The index is data (doctor/data/known_issues.json.gz, built by tools/refresh_known_issues.py from
tools/known_issues/*.jsonl); these tests pin what every entry must carry, that the build is reproducible, that no
held-out thread ships, and that lookups stay out of healthy runs.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor import known
from doctor.analyze import analyze
from doctor.known import index as kindex
from doctor.known.normalise import normalise, signature, words
from doctor.model import Evidence, Finding, Report, Severity
from doctor.registry import CATEGORIES
from doctor.render import jsonr, markdown, text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
HELDOUT = FIX / "known-issues" / "heldout-threads.sha256"
BATCH = ("The global train batch size (1 x 1) must be evenly divisible by the number of generations per prompt (8). "
         "Given the current train batch size, the valid values for the number of generations are: [].")


# ------------------------------------------------------------------------------------------------ normalise

def test_normalise_replaces_what_changes_between_runs():
    a = normalise("CUDA out of memory. Tried to allocate 1.17 GiB. GPU 0 has 79.4 GiB at /home/u/x.py 0x7f3a")
    b = normalise("CUDA out of memory. Tried to allocate 462.00 MiB. GPU 4 has 39 GiB at /opt/y/z.py 0xdead")
    assert "<n>" in a and "<path>" in a and "<hex>" in a
    assert a.replace("gib", "mib") == b.replace("gib", "mib")
    assert normalise("KeyError 'prompt'") == "keyerror 'prompt'"          # an identifier names what failed
    assert normalise("found 'cuda:0 and cuda:1' here") == "found <q> here"
    assert signature("AttributeError", "'list' object has no attribute 'get'") != \
        signature("AttributeError", "'Trainer' object has no attribute '_last_loaded_step'")


def test_signature_ignores_module_of_the_type_and_numbers():
    assert signature("torch.OutOfMemoryError", "Tried 2 GiB") == signature("OutOfMemoryError", "Tried 9 GiB")
    assert signature("ValueError", "x 1") != signature("TypeError", "x 1")


def test_words_keep_quoted_identifiers_and_drop_paths():
    w = words("KeyError: 'prompt' raised in /usr/lib/python3/site-packages/trl/grpo_trainer.py")
    assert "prompt" in w and "keyerror" in w
    assert not any("site" in x or "packages" in x for x in w)


# ------------------------------------------------------------------------------------------------ matching

def _toy() -> kindex.Index:
    return kindex.Index({"meta": {"built": "2026-01-01", "source": "toy"}, "threads": [
        {"thread": "a/b#1", "title": "batch", "state": "closed", "category": "batch-divisibility", "versions": "trl 0.16",
         "signatures": [{"type": "ValueError", "message": BATCH}], "resolution": "Raise the batch size to a multiple of num_generations.",
         "confidence": "maintainer"},
        {"thread": "a/b#2", "title": "oom", "state": "open", "category": "cuda-oom", "versions": "",
         "signatures": [{"type": "torch.OutOfMemoryError", "message": "CUDA out of memory. Tried to allocate 2 GiB."}],
         "resolution": "", "confidence": "unresolved"},
        {"thread": "a/b#3", "title": "nccl", "state": "closed", "category": "nccl-timeout", "versions": "",
         "signatures": [{"type": None, "message": "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                                                  "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"}],
         "resolution": "", "confidence": "unresolved"},
    ]})


def test_exact_signature_matches_whatever_the_numbers():
    m = _toy().match("ValueError", BATCH.replace("(1 x 1)", "(4 x 2)").replace("(8)", "(16)"), "batch-divisibility")
    assert m and m[0].thread == "a/b#1" and m[0].exact and m[0].score == pytest.approx(1.0)


def test_similar_message_matches_and_unrelated_one_does_not():
    idx = _toy()
    m = idx.match(None, "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99, OpType=BROADCAST, "
                        "NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds", "nccl-timeout")
    assert m and m[0].thread == "a/b#3" and not m[0].exact
    assert idx.match("KeyError", "'image'", "other") == []
    assert idx.match("ValueError", "completely different words about tokenizer padding side", None) == []


def test_exclude_leaves_a_thread_out():
    assert _toy().match("ValueError", BATCH, None, exclude=frozenset({"a/b#1"})) == []


def test_match_json_has_the_schema_fields():
    item = _toy().match("ValueError", BATCH, "batch-divisibility")[0].to_json()
    assert set(item) == {"thread", "url", "title", "state", "category", "versions", "resolution", "confidence", "score"}
    assert item["url"] == "https://github.com/a/b/issues/1" and 0 < item["score"] <= 1


# --------------------------------------------------------------------------------------------- shipped index

def _shipped() -> dict:
    return kindex.read(kindex.DATA)


def test_shipped_index_entries_are_complete():
    doc = _shipped()
    assert doc["meta"]["built"] and doc["meta"]["source"] and doc["meta"]["threads"] == len(doc["threads"])
    assert len(doc["threads"]) >= 100
    assert sum(1 for t in doc["threads"] if not t["title"]) <= 10  # a title is recorded for nearly every thread
    seen = set()
    for t in doc["threads"]:
        assert t["thread"] not in seen
        seen.add(t["thread"])
        assert t["category"] in CATEGORIES, t["thread"]
        assert t["confidence"] in ("confirmed", "maintainer", "unresolved"), t["thread"]
        assert t["state"] in ("open", "closed") and isinstance(t["title"], str), t["thread"]
        assert t["signatures"] and all(s["message"] for s in t["signatures"]), t["thread"]
        if t["confidence"] != "unresolved":
            assert t["resolution"], t["thread"]


def test_no_shipped_entry_is_a_held_out_thread():
    held = set(HELDOUT.read_text().split())
    assert len(held) > 10
    shipped = [t["thread"] for t in _shipped()["threads"]]
    bad = [t for t in shipped if hashlib.sha256(t.lower().encode()).hexdigest() in held]
    assert bad == []
    # the check itself can fail: a held-out hash is recognised
    assert hashlib.sha256(b"x/y#1").hexdigest() not in held


def test_build_is_reproducible(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import refresh_known_issues as tool
    finally:
        sys.path.remove(str(ROOT / "tools"))
    out = tmp_path / "k.json.gz"
    tool.build(out=out, heldout=set(HELDOUT.read_text().split()), categories=set(CATEGORIES))
    assert out.read_bytes() == kindex.DATA.read_bytes()


def test_resolutions_are_short_paraphrases():
    for t in _shipped()["threads"]:
        assert len(t["resolution"]) <= 400, t["thread"]


# --------------------------------------------------------------------------------------------- renderers

def _finding(ev: str, category: str = "batch-divisibility", sev: Severity = Severity.error) -> Finding:
    return Finding("GD101", "slug", category, sev, "Title", "msg", fix=("own fix",),
                   evidence=(Evidence("log.txt", 3, ev),))


@pytest.fixture
def toy_index(monkeypatch):
    monkeypatch.setattr(kindex, "_index", _toy())
    known._lookup.cache_clear()
    yield
    known._lookup.cache_clear()


def test_json_renderer_adds_known_issues_and_a_fix_line(toy_index):
    rep = Report("X", [], {}, [_finding(f"[rank0]: ValueError: {BATCH}")])
    doc = json.loads(jsonr.render(rep))
    f = doc["findings"][0]
    assert f["known_issues"][0]["thread"] == "a/b#1"
    assert f["fix"][0] == "own fix" and "a/b#1" in f["fix"][-1] and "Raise the batch" in f["fix"][-1]
    assert f["known_issues"][0]["basis"] == "raise-site"
    assert "known_issues" not in rep.to_json()["findings"][0]  # goldens (Report.to_json) are unchanged


def test_unresolved_thread_gives_no_fix_line(toy_index):
    rep = Report("X", [], {}, [_finding("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3 GiB.",
                                        "cuda-oom")])
    f = json.loads(jsonr.render(rep))["findings"][0]
    assert f["known_issues"][0]["thread"] == "a/b#2" and f["fix"] == ["own fix"]


def test_warning_findings_are_not_looked_up(toy_index):
    rep = Report("X", [], {}, [_finding(f"ValueError: {BATCH}", sev=Severity.warning)])
    assert "known_issues" not in json.loads(jsonr.render(rep))["findings"][0]


def test_text_and_markdown_show_threads_escaped(monkeypatch):
    idx = _toy()
    idx.threads[0] = dict(idx.threads[0], title="[bold red]boom[/] `x` <b>y</b> *z*\x1b[31m")
    monkeypatch.setattr(kindex, "_index", idx)
    known._lookup.cache_clear()
    rep = Report("X", [], {}, [_finding(f"ValueError: {BATCH}")])
    out = text.render(rep)
    assert "known issues:" in out and "a/b#1 ([bold red]boom[/]" in out and "\x1b" not in out
    md = markdown.render(rep)
    assert "[a/b\\#1](https://github.com/a/b/issues/1)" in md
    assert "<b>" not in md and "\\<b\\>" in md and "\\[bold red\\]" in md
    known._lookup.cache_clear()


def test_markdown_link_only_for_wellformed_thread_ids():
    assert known.safe_url("https://github.com/a/b/issues/1")
    assert not known.safe_url("https://github.com/a/b/issues/1)(javascript:x")
    assert not known.safe_url("javascript:alert(1)")


def test_real_log_gets_the_known_thread():
    known._lookup.cache_clear()
    rep = analyze([str(FIX / "logs" / "dev-020-batch-1x1-numgen8-plain-traceback" / "log.txt")])
    f = next(f for f in rep.findings if f.severity == Severity.error)
    shown = known.for_finding(f)
    assert shown and all(m.category == "batch-divisibility" for m in shown)
    assert len(shown) <= 3


def test_healthy_log_never_loads_the_index(monkeypatch):
    monkeypatch.setattr(kindex, "_index", None)
    known._lookup.cache_clear()
    rep = analyze([str(FIX / "logs" / "real-grpo-lora-healthy")])
    jsonr.render(rep)
    text.render(rep)
    markdown.render(rep)
    assert not kindex.loaded()


def test_rules_known_issues_prints_size_and_date():
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "rules", "--known-issues"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = _shipped()
    assert p.stdout.startswith(f"known-issues index: {len(doc['threads'])} threads, built {doc['meta']['built']} from ")


def test_similar_threads_of_another_trainer_are_left_out_when_the_trainer_is_known():
    """A verl run's NCCL timeout reads like ms-swift threads' too; words alike across trainers say nothing about this
    run, so those threads go from 'similar threads' (text, markdown, JSON); a runtime's tracker (vLLM) stays."""
    case = FIX / "devlogs2" / "144-verl-sglang-rollout-build-stuck-mesh-tp-allreduce-600s"
    report = analyze([str(case / "log.txt")])
    assert report.run["framework"] == "verl"
    first = report.findings[0]
    everyone = [m.thread for m in known.similar(first)]
    assert any(t.startswith("modelscope/ms-swift#") for t in everyone)   # the thread is there without the run
    shown = [m.thread for m in known.similar(first, report.run)]
    assert shown and not any(t.startswith("modelscope/ms-swift#") for t in shown)
    assert "vllm-project/vllm#3071" in shown
    out = text.render(report) + markdown.render(report) + jsonr.render(report)
    assert "modelscope/ms-swift#" not in out
    # with the trainer not told, a trainer's thread goes too when nothing of the run shows that trainer (issue 29
    # point 4: words alike say nothing of a run whose trainer is not known); a library's tracker stays
    unknown = [m.thread for m in known.similar(first, {"framework": None, "framework_source": "unknown"})]
    assert not any(t.startswith("modelscope/ms-swift#") for t in unknown) and "vllm-project/vllm#3071" in unknown


def test_the_shipped_index_comes_back_from_the_cache_as_built(tmp_path, monkeypatch):
    # the index is kept in the cache folder with its vectors: what comes back is what a build from the file gives
    from doctor.known import index as ki
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = ki.Index(ki.read(ki.DATA))
    first, again = ki._shipped(), ki._shipped()
    assert list(tmp_path.glob("grpo-doctor/known-*.marshal"))
    q = ("RuntimeError", "CUDA out of memory. Tried to allocate 2.00 GiB", "out-of-memory")
    assert again.match(*q) == built.match(*q)
    # from the cache, the threads and signatures are decoded as a lookup reads them: a few of them
    assert 0 < sum(t is not None for t in again.threads._got) < len(built.threads) / 4
    assert 0 < sum(t is not None for t in again.sigs._got) < len(built.sigs) / 4
    for idx in (first, again):
        for k in ki.Index._FIELDS:
            if k not in ki.Index._PACKED:
                assert getattr(idx, k) == getattr(built, k), k
            assert list(getattr(idx, k)) == list(getattr(built, k)), k
        assert idx.threads[-1] == built.threads[-1] and idx.sigs[2:5] == built.sigs[2:5]
