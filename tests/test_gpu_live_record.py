"""What the live NVML path saw on a real H100 (fixtures/gpu/h100-live, recorded by tools/gpu_live_check.sh):
the recorded samples are valid GpuSample rows, and the recorded watch/preflight reports keep the contract."""
from __future__ import annotations

import dataclasses
import json

from conftest import ROOT

from doctor.sources.gpu import GpuSample

REC = ROOT / "fixtures" / "gpu" / "h100-live"


def test_recorded_nvml_sample_is_a_gpusample():
    rows = json.loads((REC / "nvml-idle.json").read_text())
    assert len(rows) == 1
    names = {f.name for f in dataclasses.fields(GpuSample)}
    assert set(rows[0]) <= names, set(rows[0]) - names
    g = rows[0]
    assert g["name"] == "NVIDIA H100 80GB HBM3" and g["source"] == "nvml"
    assert g["mem_total_mib"] == 81559.0 and g["mem_used_mib"] == 480.0 and g["util_pct"] == 0.0
    # NVML answers NotSupported for retired pages on H100: unknown, never 0
    assert g["retired_pages"] is None and g["retired_pending"] is None


def test_recorded_live_reports():
    pre = json.loads((REC / "preflight.json").read_text())
    assert pre["schema_version"] == 1
    plan = [f for f in pre["findings"] if f["rule_id"] == "GD470"]
    assert plan and "NVML (live)" in plan[0]["message"] and "79.6 GiB" in plan[0]["message"]
    rep = json.loads((REC / "watch-report.json").read_text())
    assert [f["rule_id"] for f in rep["findings"]] == ["GD901", "GD903"]
    assert "77.3 GiB" in rep["findings"][1]["message"]
    # recorded before GD903 became part of GD504: the old id still names the rule (--select, --ignore, explain)
    from doctor.registry import find_rule
    assert find_rule("GD903").id == "GD504" and find_rule("GD904").id == "GD502"
    assert find_rule("GD901").id == "GD320" and find_rule("GD902").id == "GD321"
