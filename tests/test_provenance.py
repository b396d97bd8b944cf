"""Issue 14 point 3: ``raised_by`` on the findings that quote an exception, the versions narrowed from the wording
of the errors (doctor/classify/provenance.py), the ranking of the sites (doctor/classify/site_rank.py), and what
it costs (the index opens only for a failing log, and reads a few buckets)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from doctor.analyze import analyze
from doctor.classify import raise_sites as rs
from doctor.model import Evidence, Finding, RaisedBy, Report, Severity
from doctor.render import jsonr, markdown, text
from doctor.sources.swiftconfig import RunConfig
from doctor.swift import run as swift_run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "fixtures" / "logs"


def _report(case: str) -> Report:
    return analyze([str(LOGS / case)])


def test_raised_by_from_a_real_trl_message():
    """dev-020 (OpenManus/OpenManus-RL, trl 0.15/0.16 era): the stack runs through trl/trainer/grpo_trainer.py."""
    r = _report("dev-020-batch-1x1-numgen8-plain-traceback")
    f = r.findings[0]
    assert f.rule_id == "GD101"
    assert f.raised_by == (RaisedBy("trl", "0.15-0.16", "trl/trainer/grpo_trainer.py", "GRPOTrainer.__init__",
                                    "ValueError"),)
    assert r.run["inferred_versions"] == {"trl": {"versions": "0.15-0.16", "from": "the wording of the error"}}


@pytest.mark.parametrize("case", ["real-batch-div-grad-accum", "real-unknown-flag", "real-num-generations-1"])
def test_raised_by_and_narrowing_from_real_ms_swift_runs(case):
    """Real ms-swift 4.6.0 runs whose logs print no version: the narrowed range holds the version that ran."""
    r = _report(case)
    assert r.run["versions"].get("ms-swift") is None and r.run["framework_version"] is None
    ran = tomllib.loads((LOGS / case / "provenance.toml").read_text())["versions"]["ms_swift"]
    narrowed = r.run["inferred_versions"]["ms-swift"]["versions"]
    assert _holds(narrowed, ran)
    rb = r.findings[0].raised_by[0]
    assert rb.package == "ms-swift" and _holds(rb.versions, ran)


def _holds(versions: str, version: str) -> bool:
    from doctor.classify.site_rank import holds
    return holds(versions, version)


def test_every_narrowed_golden_holds_the_version_that_ran():
    """Across the goldens: a narrowed range never excludes the version a case's provenance records, and no
    package the log printed a version of is narrowed."""
    checked = 0
    for path in sorted(LOGS.glob("*.expected.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        inferred = doc["run"].get("inferred_versions") or {}
        assert not set(inferred) & set(doc["run"].get("versions") or {}), path.name
        prov = LOGS / path.name.replace(".expected.json", "") / "provenance.toml"
        ran = tomllib.loads(prov.read_text()).get("versions", {}) if prov.is_file() else {}
        for pkg, v in inferred.items():
            assert v["from"] == "the wording of the error"
            if ran.get(pkg.replace("-", "_")):
                assert _holds(v["versions"], ran[pkg.replace("-", "_")]), (path.name, pkg, v, ran)
                checked += 1
    assert checked >= 8


def test_a_tie_between_packages_shows_both_and_narrows_nothing():
    """dev-021: trl's check and ms-swift 3.1-3.3's copy of it, pasted without stack in a log that names no
    framework: both are shown, and no version is claimed."""
    r = _report("dev-021-batch-1x1-numgen8-ga-not-counted")
    assert {(s.package, s.versions) for s in r.findings[0].raised_by} == {("ms-swift", "3.1-3.3"),
                                                                          ("trl", "0.15-0.16")}
    assert "inferred_versions" not in r.run


def test_the_stack_overrules_a_site_elsewhere_in_its_package():
    """edge-fp16-unscale: torch.amp's GradScaler raised it (the stack says so); the index holds only the FSDP
    scaler of torch.distributed with the same words, so nothing is claimed."""
    r = _report("edge-fp16-unscale")
    assert not any(f.raised_by for f in r.findings)


def test_ranking_prefers_grpo_config_over_trl_experimental_copies():
    """trl/trainer/grpo_config.py (trl 0.18+) and its copies in trl/experimental (MiniLLMConfig, SDFTConfig, ...):
    GRPOConfig first, with or without the stack; the stack picks ms-swift's copy when it went through it."""
    line = "ValueError: generation_batch_size (12) must be divisible by the global batch size (8)."
    top = rs.raised_by(line, top=1)[0]
    assert (top["package"], top["function"], top["module"]) == ("trl", "GRPOConfig.__post_init__",
                                                                 "trl/trainer/grpo_config.py")
    frames = ["/x/site-packages/trl/trainer/grpo_config.py"]
    assert rs.raised_by(line, top=1, frames=frames)[0]["function"] == "GRPOConfig.__post_init__"
    frames = ["/x/site-packages/swift/rlhf_trainers/args_mixin.py"]
    assert rs.raised_by(line, top=1, frames=frames)[0]["module"] == "swift/rlhf_trainers/args_mixin.py"
    assert rs.raised_by(line, top=1, prefer=("ms-swift",))[0]["package"] == "ms-swift"


def test_ranking_puts_transformers_flax_and_tensorflow_copies_after_the_pytorch_code():
    """modeling_flax_utils.py repeats modeling_utils.py's wordings; a GRPO run loads PyTorch models, so without a
    frame in Flax code its site is not the one named (a QLoRA checkpoint load was told to come from Flax)."""
    line = ("OSError: /home/u/qlora/7b/checkpoint-21250 does not appear to have a file named config.json. Checkout "
            "'https://huggingface.co//home/u/qlora/7b/checkpoint-21250/None' for available files.")
    sites = rs.raised_by(line, top=3)
    assert sites and "flax" not in sites[0]["module"] and "_tf_" not in sites[0]["module"], sites[0]


def test_a_specific_template_beats_a_free_hole():
    """dev-002 (modelscope/ms-swift, 3.x): `Expected {any} inputs, got {int}` of ms-swift's GRPOTrainer, not
    `Expected {any}, got {any}` of a DeepSpeed test that swallows any text."""
    r = _report("dev-002-eval-expected-32-got-4")
    rb = r.findings[0].raised_by[0]
    assert (rb.package, rb.module) == ("ms-swift", "swift/trainers/rlhf_trainer/grpo_trainer.py")
    assert r.run["inferred_versions"]["ms-swift"]["versions"] == "3.4-3.7"


# the wording ms-swift 3.5-3.11 raises in swift/trainers/rlhf_arguments.py (GRPOConfig.check_num_generations);
# --num_generations_eval exists from 3.12 (doctor/swift/flags.py)
EVAL_3X = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/swift/cli/rlhf.py", line 5, in <module>
    rlhf_main()
  File "/opt/conda/lib/python3.10/site-packages/swift/trainers/rlhf_arguments.py", line 120, in check_num_generations
    raise ValueError(
ValueError: The global eval batch size (2 x 2) must be evenly divisible by the number of generations per prompt \
(8). Given the current global eval batch size, the valid values for the number of generations are: [2, 4].
"""


def test_the_inferred_range_chooses_the_flag_names(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(EVAL_3X)
    r = analyze([str(log)])
    assert r.run["inferred_versions"] == {"ms-swift": {"versions": "3.5-3.11", "from": "the wording of the error"}}
    fix = " ".join(r.findings[0].fix)
    assert r.findings[0].rule_id == "GD102" and "--num_generations 2 or 4" in fix
    assert "num_generations_eval" not in fix  # a flag of 3.12+: the version unknown would read as recent
    log.write_text("[INFO:swift] swift.__version__: 3.12.0\n" + EVAL_3X)  # the version line ms-swift prints
    r = analyze([str(log)])
    assert "inferred_versions" not in r.run and "--num_generations_eval" in " ".join(r.findings[0].fix)


def test_swift_run_reads_the_inferred_range():
    run = RunConfig(inferred_versions={"ms-swift": "3.1-3.3"})
    assert swift_run.at_least(run, 3, 1) is True and swift_run.at_least(run, 3, 4) is False
    assert swift_run.tuner_flag(run) == "train_type"
    assert not swift_run.flag_in_version(run, "vllm_mode") and swift_run.flag_in_version(run, "sleep_level")
    assert swift_run.version_label(run) == "ms-swift 3.1-3.3 (inferred from the wording of the error)"
    run = RunConfig(inferred_versions={"ms-swift": "3.10-4.2"})
    assert swift_run.at_least(run, 4, 0) is None and swift_run.tuner_flag(run) == "tuner_type"
    run = RunConfig(versions={"ms-swift": "4.6.0"}, inferred_versions={"ms-swift": "3.1-3.3"})
    assert swift_run.at_least(run, 4, 0) is True and swift_run.version_label(run) == "ms-swift 4.6.0"


def test_rendering_text_json_markdown():
    r = _report("real-batch-div-grad-accum")
    # the traceback's raising frame is that function; the log printed no ms-swift version, so the indexed releases
    # holding the wording (the header's inferred range) are not printed as the releases that raised it
    line = ("raised by ms-swift `RolloutTrainerArgumentsMixin._init_generation_batch_params` "
            "(swift/rlhf_trainers/args_mixin.py)")
    out = text.render(r)
    assert line in out
    assert out.splitlines()[0].endswith("ms-swift 4.2-4.6 (from the wording of the error), world size 1")
    doc = json.loads(jsonr.render(r))
    assert doc["findings"][0]["raised_by"] == [{
        "package": "ms-swift", "versions": "4.2-4.6", "module": "swift/rlhf_trainers/args_mixin.py",
        "function": "RolloutTrainerArgumentsMixin._init_generation_batch_params", "kind": "ValueError",
        # ms-swift 4.6.0 swift/rlhf_trainers/args_mixin.py lines 224-225, read by hand from the wheel
        "condition": "num_generations > 1 and self.generation_batch_size % num_generations != 0"}]
    assert doc["run"]["inferred_versions"]["ms-swift"]["versions"] == "4.2-4.6"
    md = markdown.render(r).splitlines()
    assert line in md  # nothing in it needs escaping; the function is a code span
    assert "Run: ms-swift 4.2-4.6 (from the wording of the error), world size 1" in md


def test_rendering_escapes_what_the_index_holds():
    """The index is read from third-party source: its names go through the same escaping as log text."""
    rb = RaisedBy("x[bold]y[/bold]", "1.0", "a/<b>*c*.py", "F`oo`.[red]bar", "ValueError")
    f = Finding("GD999", "unrecognised-failure", "other", Severity.error, "t", "m",
                evidence=(Evidence("log.txt", 1, "ValueError: x"),), raised_by=(rb,))
    r = Report("0", [], {"framework": "ms-swift"}, [f])
    out = text.render(r, color=True)
    assert "raised by x[bold]y[/bold] 1.0 `F`oo`.[red]bar` (a/<b>*c*.py)" in out  # shown, not applied as markup
    md = next(l for l in markdown.render(r).splitlines() if l.startswith("raised by"))
    assert "x\\[bold\\]y" in md and "\\*c\\*" in md and "<b>" not in md.replace("`<b>`", "")
    from doctor.render import html
    assert "raised by x[bold]y[/bold] 1.0 `F`oo`.[red]bar` (a/&lt;b&gt;*c*.py)" in html.render(r)


def test_the_first_lookup_reads_a_few_buckets():
    idx = rs.index(rs.DATA)  # a fresh copy: nothing decoded yet
    rs.lookup("ValueError: generation_batch_size (3) must be evenly divisible by num_generations (4). Valid values: "
              "[3].", idx=idx)
    assert 0 < len(idx.store._buckets) <= 32 < idx.store.n


def test_healthy_logs_and_help_do_not_open_the_index():
    healthy = [str(p.parent) for p in sorted(LOGS.glob("*/provenance.toml"))
               if tomllib.loads(p.read_text()).get("expect_no_error")]
    assert len(healthy) >= 5
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom doctor.cli import app\n"
            "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
            "from doctor.analyze import analyze\n"
            f"for c in {healthy!r}:\n    analyze([c])\n"
            "m = sys.modules.get('doctor.classify.raise_sites')\nprint(bool(m and m.loaded()))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "False"


def test_a_raising_frame_in_another_installed_package_contradicts_the_site():
    from doctor.classify.site_rank import contradicted
    site = "trl/trainer/grpo_trainer.py"
    sp = "/usr/local/lib/python3.10/site-packages/"
    assert not contradicted(site, [sp + "trl/trainer/grpo_trainer.py"])
    assert contradicted(site, [sp + "trl/trainer/utils.py"])                         # same package, another file
    assert contradicted(site, [sp + "trl/trainer/grpo_trainer.py", sp + "transformers/trainer.py"])  # transformers raised
    assert contradicted(site, ["/usr/lib/python3/dist-packages/vllm/config.py"])
    assert not contradicted(site, ["/home/me/open-r1/src/open_r1/grpo_trainer_copy.py"])  # a copy in the user's code
    assert not contradicted(site, ["/workspace/transformers/src/transformers/trainer.py"])  # a source checkout: not told
    assert not contradicted(site, [])


def test_a_range_from_the_oldest_release_read_is_open_below():
    from doctor.classify.raise_sites import index, minor, open_below
    from doctor.model import RaisedBy
    first = minor(index().meta["versions"]["vllm"][0])        # the oldest vLLM release the index has read
    assert open_below("vllm", f"{first}-0.12") == "<=0.12"
    assert open_below("vllm", f"{first},0.20-0.22") == f"<={first},0.20-0.22"
    assert open_below("vllm", "0.20-0.22") == "0.20-0.22"       # a range that starts later: its start is known
    assert open_below("no-such-package", "1.0-2.0") == "1.0-2.0"
    rb = RaisedBy("vllm", f"{first}-0.12", "vllm/config.py", "ModelConfig.verify", "ValueError", "<=0.12")
    assert rb.describe() == "raised by vllm <=0.12 `ModelConfig.verify` (vllm/config.py)"
    assert rb.to_json()["versions"] == f"{first}-0.12"           # the JSON keeps the releases read


def test_a_wording_torch_raises_too_names_no_package_without_a_frame():
    """torch's Module.load_state_dict raises "Error(s) in loading state_dict for <class>:" for every module, and the
    index (which holds no torch) has transformers' copy: without a frame of transformers' loader, the report must not
    say that transformers raised it (dev15 1812: PEFT's wrapper, a strict torch load on a resume)."""
    case = next((ROOT / "fixtures" / "devlogs15").glob("1812-*"))
    r = analyze([str(case / "log.txt")])
    assert r.findings[0].category == "checkpoint-adapter-only-load-args"
    assert not any(rb.package == "transformers" for f in r.findings for rb in f.raised_by)


def test_cpython_s_own_wordings_are_not_placed_in_a_library():
    """'max() arg is an empty sequence' comes from calling the built-in (Python/bltinmodule.c min_max); vLLM's
    tensor_schema template '{name} is an empty sequence' holds its words but is not where it came from (dev20 2510:
    DeepSpeed ZeRO-3's optimizer set-up raised it, and the report said vLLM, at certain)."""
    assert rs.lookup("ValueError: max() arg is an empty sequence") == []
    assert rs.lookup("IndexError: list index out of range") == []
    assert rs.lookup("ValueError: The decoder prompt (length 17772) is longer than the maximum model length of 16384.")


def test_packages_that_raise_the_same_words_are_said_together_when_the_run_shows_neither():
    # two packages of the index hold "Image features and image tokens do not match" (ms-swift's template, transformers'
    # Qwen2-VL models); a paste that shows no stack and names no framework gets one line, not one claim per package
    from doctor.model import raised_lines
    loose = [RaisedBy("ms-swift", "3.0-3.9", "swift/llm/template/base.py", "Template._encode", "ValueError",
                      scope="package"),
             RaisedBy("transformers", "4.49-4.51", "transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py",
                      "Qwen2_5_VLModel.forward", "ValueError", scope="package")]
    assert raised_lines(loose) == ["this message is raised by ms-swift and by transformers (the run does not show "
                                   "which)"]
    assert raised_lines(loose[:1]) == ["this message is raised by ms-swift"]
    sure = RaisedBy("trl", "0.15-0.16", "trl/trainer/grpo_trainer.py", "GRPOTrainer.__init__", "ValueError",
                    shown="0.15-0.16")
    assert raised_lines([sure, *loose])[0].startswith("raised by trl 0.15-0.16 `GRPOTrainer.__init__`")


def test_a_package_the_run_shows_wins_over_one_it_shows_nowhere(tmp_path):
    # the same words in a paste that prints transformers' version and no stack (a LLaMA-Factory issue's shape,
    # blind34 case 11): ms-swift, which the run shows nowhere, is not named
    log = tmp_path / "train.log"
    log.write_text("- `transformers` version: 4.49.0\n"
                   "ValueError: Image features and image tokens do not match: tokens: 1468, features 1936\n")
    packages = {rb.package for f in analyze([str(log)]).findings for rb in f.raised_by}
    assert packages == {"transformers"}
