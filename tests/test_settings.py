"""[tool.grpo-doctor] in pyproject.toml: found in or above the CWD (never above the analysed run: issue 30.3),
--config FILE, --isolated; the command line wins; --fail-on never; a bad file is one line and exit 2."""
from __future__ import annotations

import json
import shutil

from test_cli import BATCH_LOG, assert_one_line_error, run


def project(tmp_path, body: str):
    proj = tmp_path / "proj"
    (proj / "runs" / "a").mkdir(parents=True)
    shutil.copy(BATCH_LOG, proj / "runs" / "a" / "log.txt")
    (proj / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.grpo-doctor]\n{body}\n")
    return proj


def test_found_in_the_cwd_not_above_the_run_directory(tmp_path):
    proj = project(tmp_path, 'format = "json"\nignore = ["GD101"]\nfail-on = "never"')
    p = run("analyze", str(proj / "runs" / "a"), cwd=proj)
    assert p.returncode == 0, p.stderr
    assert "GD101" not in {f["rule_id"] for f in json.loads(p.stdout)["findings"]}
    p = run("analyze", str(proj / "runs" / "a"), cwd=tmp_path)  # the run's own tree: not obeyed
    assert p.returncode == 1 and p.stdout.decode().startswith("grpo-doctor "), p.stderr


def test_found_above_the_cwd_and_the_command_line_wins(tmp_path):
    proj = project(tmp_path, 'format = "json"')
    p = run("analyze", str(BATCH_LOG), cwd=proj / "runs")
    assert p.returncode == 1 and json.loads(p.stdout)["findings"][0]["rule_id"] == "GD101"
    p = run("analyze", str(BATCH_LOG), "--format", "text", cwd=proj / "runs")
    assert p.stdout.decode().startswith("grpo-doctor ")


def test_isolated_and_config_file(tmp_path):
    proj = project(tmp_path, 'format = "json"\nfail-on = "never"')
    p = run("analyze", str(proj / "runs" / "a"), "--isolated", cwd=tmp_path)
    assert p.returncode == 1 and p.stdout.decode().startswith("grpo-doctor ")
    other = tmp_path / "strict.toml"
    other.write_text('select = ["GD1"]\nformat = "markdown"\n')
    p = run("analyze", str(proj / "runs" / "a"), "--config", str(other), cwd=tmp_path)
    assert p.returncode == 1 and p.stdout.decode().startswith("## grpo-doctor report")


def test_fail_on_never(tmp_path):
    p = run("analyze", str(BATCH_LOG), "--fail-on", "never")
    assert p.returncode == 0 and "GD101" in p.stdout.decode() and "exit 1" not in p.stdout.decode()


def test_gpu_mem_for_preflight(tmp_path):
    proj = project(tmp_path, "gpu-mem = 24")
    p = run("preflight", "--format", "json", "--", "swift", "rlhf", "--rlhf_type", "grpo", "--model",
            "Qwen/Qwen2.5-7B-Instruct", cwd=proj)
    assert json.loads(p.stdout)["run"]["preflight"]["gpu_memory_gib"] == 24.0, p.stderr


def test_bad_files_are_one_line_errors(tmp_path):
    proj = project(tmp_path, 'fail_on = "sometimes"')
    assert_one_line_error(run("analyze", str(proj / "runs" / "a"), cwd=proj), "pyproject.toml", "fail-on")
    proj = project(tmp_path / "2", 'formt = "json"')
    assert_one_line_error(run("check-ckpt", str(proj / "runs" / "a"), cwd=proj), "formt", "did you mean format")
    proj = project(tmp_path / "3", 'select = ["GD999X"]')
    assert_one_line_error(run("analyze", str(proj / "runs" / "a"), cwd=proj), "GD999X", "did you mean")
    assert_one_line_error(run("analyze", str(BATCH_LOG), "--config", str(tmp_path / "nope.toml")), "nope.toml")
