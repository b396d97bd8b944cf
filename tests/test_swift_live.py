"""Real ms-swift in the loop: re-run a subset of tools/swiftgen.py's scenarios live, diagnose each
with `grpo-doctor analyze`, and prove that the fix it prints works by running swift again with it.

Marked `swift`; installs nothing. Skips when no Python with ms-swift is found
($GRPO_DOCTOR_SWIFT_PYTHON, this interpreter, or the `swift` script on PATH). One swift process at
a time; the tiny model, data and the LoRA base are built once per session in a temp dir.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import swiftgen  # noqa: E402

pytestmark = pytest.mark.swift

FLAG_VALUES = re.compile(r"(--[a-z_]+) (\d+(?:(?:, | or )\d+)*)")


@pytest.fixture(scope="session")
def gen(tmp_path_factory):
    py = swiftgen.swift_python()
    if not py or not swiftgen.swift_ok(py):
        pytest.skip("ms-swift is not importable (pip install -e '.[swift]', or set GRPO_DOCTOR_SWIFT_PYTHON)")
    g = swiftgen.Generator(tmp_path_factory.mktemp("swift-live"), py, log=lambda m: print(m, flush=True),
                           sft_steps=20, tiny_base=True)
    g.build_tiny()
    return g


def analyze(fixture: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", str(fixture), "--format", "json"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def diagnose(gen, name: str, tmp_path: Path):
    sc = swiftgen.BY_NAME[name]
    res = gen.run_scenario(sc)
    fixture = swiftgen.write_fixture(gen, sc, res, tmp_path)
    rep = analyze(fixture)
    assert rep["findings"], f"{name}: no finding; log tail:\n{res.log[-2000:]}"
    first = rep["findings"][0]
    assert first["category"] == sc.expect["expect_category"], (
        f"{name}: findings[0] is {first['rule_id']} {first['category']}; log tail:\n{res.log[-2000:]}")
    for rid in sc.expect.get("expect_rules", []):
        assert rid in {f["rule_id"] for f in rep["findings"]}, f"{name}: {rid} should fire"
    return sc, res, first


def alternatives(finding: dict, every_value: bool) -> list[list[str]]:
    """The flag settings the fix offers: each fix line with `--flag N` is one alternative (all its flags
    together); `--per_device_train_batch_size 2 or 4` is two alternatives when every_value, else the first."""
    out = []
    for line in finding["fix"]:
        pairs = [(m.group(1), re.split(r", | or ", m.group(2))) for m in FLAG_VALUES.finditer(line)]
        if not pairs:
            continue
        if every_value and len(pairs) == 1:
            out += [[pairs[0][0], v] for v in pairs[0][1]]
        else:
            out.append([x for flag, vals in pairs for x in (flag, vals[0])])
    return out


def assert_args_pass(gen, sc, flags: list[str], suffix: str) -> None:
    res = gen.run_scenario(sc, extra=[*flags, "--max_steps", "1"], suffix=suffix)
    assert "must be evenly divisible" not in res.log, f"{flags}: still rejected\n{res.log[-3000:]}"
    assert res.rc == 0, f"{flags} did not fix {sc.name}: rc {res.rc}\n{res.log[-3000:]}"


@pytest.mark.parametrize("name", ["batch-div-train", "batch-div-eval-default", "ddp2-batch-div-child-failed",
                                  "num-generations-1"])
def test_divisibility_fix_passes_the_argument_check(gen, name, tmp_path):
    sc, res, first = diagnose(gen, name, tmp_path)
    assert res.rc not in (0, None)
    # torchrun re-runs cost twice as much: there, one value per alternative
    fixes = alternatives(first, every_value=not dict(sc.env).get("NPROC_PER_NODE"))
    assert fixes, f"{name}: the fix names no flag value: {first['fix']}"
    for i, flags in enumerate(fixes):
        assert_args_pass(gen, sc, flags, f"-fix{i}")


def test_load_args_fix_saves_full_weights(gen, tmp_path):
    sc, res, first = diagnose(gen, "full-from-merged-load-args-true", tmp_path)
    assert res.rc == 0
    ckpts = sorted(res.out_dir.glob("v*/checkpoint-*"))
    assert ckpts and not list(ckpts[-1].glob("model*.safetensors")), "the bad run should save an adapter only"
    assert list(ckpts[-1].glob("adapter_model.safetensors"))
    assert any("--load_args false" in line for line in first["fix"]), first["fix"]
    fixed = gen.run_scenario(sc, extra=["--load_args", "false", "--max_steps", "2"], suffix="-fix")
    assert fixed.rc == 0, fixed.log[-3000:]
    ckpts = sorted(fixed.out_dir.glob("v*/checkpoint-*"))
    assert ckpts, f"no checkpoint in {fixed.out_dir}"
    assert list(ckpts[-1].glob("model*.safetensors")), sorted(p.name for p in ckpts[-1].iterdir())
    assert not list(ckpts[-1].glob("adapter_model.safetensors"))


@pytest.mark.parametrize("name", ["reward-func-raises", "unknown-flag"])
def test_failure_is_named(gen, name, tmp_path):
    sc, res, first = diagnose(gen, name, tmp_path)
    assert res.rc not in (0, None)
    assert first["evidence"], f"{name}: no evidence line"
