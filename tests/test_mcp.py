"""Issue 20 point 6: `grpo-doctor mcp` serves analyze, explain, preflight and check-ckpt over MCP. Tested with the
official SDK's own client connected in-process (and once over real stdio); skipped without the SDK (`mcp` extra).
Without it, `grpo-doctor mcp` says how to install it and exits 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

LOGS = ROOT / "fixtures" / "logs"
CKPT = ROOT / "fixtures" / "ckpt"


def test_without_the_sdk_it_says_how_to_install(tmp_path):
    # a module named mcp that fails to import stands for an environment without the SDK
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no SDK here')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "mcp"], capture_output=True, text=True, env=env,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["grpo-doctor: grpo-doctor mcp needs the MCP Python SDK: "
                                             "pip install 'grpo-doctor[mcp]' (or pip install mcp)"]


mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")


def _call(name: str, args: dict) -> tuple[bool, str]:
    from mcp import Client

    from doctor.mcp_server import build_server

    async def go():
        async with Client(build_server()) as client:
            res = await client.call_tool(name, args)
            return bool(res.is_error), "".join(getattr(c, "text", "") for c in res.content)
    return anyio.run(go)


def test_lists_the_four_tools():
    from mcp import Client

    from doctor.mcp_server import build_server

    async def go():
        async with Client(build_server()) as client:
            return {t.name: t for t in (await client.list_tools()).tools}
    tools = anyio.run(go)
    assert set(tools) == {"analyze", "explain", "preflight", "check_ckpt"}
    assert "paths" in tools["analyze"].input_schema["properties"]


def test_analyze_returns_the_json_report():
    err, text = _call("analyze", {"paths": [str(LOGS / "real-batch-div-grad-accum")]})
    assert not err
    rep = json.loads(text)
    assert rep["schema_version"] == 1
    f = rep["findings"][0]
    assert f["rule_id"] == "GD101" and f["action"] == "relaunch" and "--gradient_accumulation_steps 2" in f["command"]


def test_explain_preflight_and_check_ckpt():
    err, text = _call("explain", {"rule": "GD301"})
    assert not err and json.loads(text)[0]["action"] == "restart"
    err, text = _call("preflight", {"command": "swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct "
                                    "--num_generations 8 --per_device_train_batch_size 3 --swift_version_is_not_a_flag 1",
                                    "swift_version": "4.6.0"})
    ids = {f["rule_id"] for f in json.loads(text)["findings"]}
    assert not err and {"GD101", "GD401"} <= ids
    ckpt = next((CKPT / "edge-truncated-safetensors").glob("checkpoint-*"))
    err, text = _call("check_ckpt", {"paths": [str(ckpt)]})
    assert not err and [f["rule_id"] for f in json.loads(text)["findings"]][:1] == ["GD802"]


def test_bad_input_is_a_one_line_tool_error(tmp_path):
    err, text = _call("analyze", {"paths": [str(tmp_path / "missing")]})
    assert err and "missing" in text and "\n" not in text.strip()
    err, text = _call("explain", {"rule": "GD000x"})
    assert err


def test_over_real_stdio():
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "doctor.cli", "mcp"], cwd=str(ROOT),
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})

    async def go():
        async with Client(params) as client:
            res = await client.call_tool("analyze", {"paths": [str(LOGS / "real-num-generations-1")]})
            return "".join(getattr(c, "text", "") for c in res.content)
    rep = json.loads(anyio.run(go))
    assert rep["findings"][0]["rule_id"] == "GD103"
