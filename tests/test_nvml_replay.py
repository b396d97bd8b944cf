"""sample_nvml() on the answers a real H100 gave through pynvml (the lead's dump, fixtures/gpu/h100-capture/
nvml-*.json, made by tools/nvml_dump.py on driver 580.159.04). The replay module answers each pynvml call the
dump recorded with the recorded value, and raises NVMLError (NotSupported) for what the H100 refused and for
calls the dump did not make: the code under test is the real mapping of sample_nvml."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from doctor.sources import gpu as gpu_src

CAP = Path(__file__).resolve().parent.parent / "fixtures" / "gpu" / "h100-capture"


class NVMLError(Exception):
    pass


def replay(dump: dict) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    gpus = dump["gpus"]

    def val(i, key):
        v = gpus[i][key]
        if isinstance(v, str) and v.startswith("unsupported"):
            raise NVMLError(v)
        return v

    def unsupported(*a):
        raise NVMLError("Not Supported (not in the dump)")

    m.NVMLError = NVMLError
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: len(gpus)
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: val(h, "name")
    m.nvmlDeviceGetUUID = lambda h: val(h, "uuid")
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(**val(h, "memory"))
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(**val(h, "utilization"))
    m.nvmlDeviceGetTemperature = lambda h, sensor: val(h, "temperature")
    m.nvmlDeviceGetPowerUsage = lambda h: val(h, "power_mw")
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: val(h, "power_limit_mw")
    m.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: val(h, "throttle_reasons")
    m.nvmlDeviceGetTotalEccErrors = lambda h, kind, counter: val(h, "ecc_uncorrected_volatile") if kind == 1 \
        else unsupported()
    m.nvmlDeviceGetRetiredPagesPendingStatus = lambda h: val(h, "retired_pages_pending")
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=p["pid"], usedGpuMemory=p["used"])
                                                        for p in val(h, "processes")]
    for name in ("nvmlDeviceGetPerformanceState", "nvmlDeviceGetPciInfo", "nvmlDeviceGetRetiredPages",
                 "nvmlDeviceGetRemappedRows", "nvmlDeviceGetMigMode"):
        setattr(m, name, unsupported)
    return m


@pytest.mark.parametrize("name", ["nvml-idle.json", "nvml-load.json"])
def test_sample_nvml_maps_the_real_answers(name, monkeypatch):
    dump = json.loads((CAP / name).read_text())
    monkeypatch.setitem(sys.modules, "pynvml", replay(dump))
    got = gpu_src.sample_nvml()
    assert got is not None and len(got) == 1
    g = got[0]
    d = dump["gpus"][0]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.uuid == d["uuid"]
    assert g.mem_total_mib == pytest.approx(81559.0)  # 85520809984 B; nvidia-smi shows 81559MiB
    assert g.mem_used_mib == pytest.approx(d["memory"]["used"] / 2 ** 20)
    assert g.power_w == pytest.approx(d["power_mw"] / 1000) and g.power_cap_w == 700.0
    assert g.retired_pending is None  # NotSupported on H100: unknown, not False or 0
    assert g.perf_state is None and g.remapped_pending is None and g.mig is None
    assert g.ecc_volatile_uncorrected == 0
    if name == "nvml-load.json":
        assert g.util_pct == 100 and g.throttle_reasons == ("SW Power Cap",)
        assert [(p.pid, round(p.mem_mib)) for p in g.processes] == [(432, 31722)]  # as nvidia-smi listed it
    else:
        assert g.util_pct == 0 and g.throttle_reasons == () and g.processes == ()
    # the same answers read from the JSON dump give the same sample
    j = gpu_src.parse_snapshot(CAP / name)[0]
    for f in ("name", "uuid", "mem_used_mib", "mem_total_mib", "util_pct", "temp_c", "power_w", "power_cap_w",
              "throttle_reasons", "ecc_volatile_uncorrected", "retired_pending"):
        assert getattr(g, f) == getattr(j, f), f


H200 = Path(__file__).resolve().parent.parent / "fixtures" / "gpu" / "h200-idle"


def _h200(with_v2: bool) -> types.ModuleType:
    """The idle H200's real answers (fixtures/gpu/h200-idle): v1 from its NVML dump, v2 from what nvidia-smi -q
    showed beside it (Used 0 MiB, Reserved 616 MiB, Total 143771 MiB)."""
    m = replay(json.loads((H200 / "nvml.json").read_text()))
    v1 = m.nvmlDeviceGetMemoryInfo
    if with_v2:
        m.nvmlMemory_v2 = 0x02000028
        v2 = types.SimpleNamespace(used=0, reserved=616 * 2 ** 20, total=150754820096,
                                   free=150754820096 - 616 * 2 ** 20)
        m.nvmlDeviceGetMemoryInfo = lambda h, version=None: v2 if version == m.nvmlMemory_v2 else v1(h)
    return m


def test_used_memory_is_what_nvidia_smi_reports(monkeypatch):
    smi = (H200 / "nvidia-smi-q.txt").read_text()
    assert "Reserved                                       : 616 MiB" in smi
    assert "Used                                           : 0 MiB" in smi
    monkeypatch.setitem(sys.modules, "pynvml", _h200(with_v2=True))
    g, = gpu_src.sample_nvml()
    assert g.mem_used_mib == 0 and g.mem_total_mib == pytest.approx(143771.0)   # nvidia-smi: 0 / 143771 MiB
    from doctor.live.integrations import _nvml_fallback, gpu_samples
    live, = gpu_samples()   # watch's samples: the same figure
    assert live.mem_used == 0
    fallback, = _nvml_fallback()
    assert fallback.mem_used == 0
    # a binding without the v2 structure: the v1 figure (615 MiB, the driver's reserve counted as used)
    monkeypatch.setitem(sys.modules, "pynvml", _h200(with_v2=False))
    g, = gpu_src.sample_nvml()
    assert g.mem_used_mib == pytest.approx(644939776 / 2 ** 20)


def test_the_projects_nvml_dump_is_a_gpu_input_of_analyze():
    from doctor.analyze import analyze
    rep = analyze([str(H200 / "nvml.json")])
    assert [i.kind for i in rep.inputs] == ["gpu"] and rep.findings == []


def test_gpu_samples_reach_the_json_report(tmp_path):
    """Every GPU sampled, summarised in run.gpus (samples, memory peak, utilisation mean/max, last): before, GPU data
    reached only the HTML charts. Two snapshots of a real 2 x A100 query CSV (fixtures/gpu), the second with GPU 1
    busy (values edited: 30000 MiB used, 80 %), checked by hand: GPU 1 peak 30000 MiB, mean util (0 + 80) / 2 = 40."""
    import json as _json

    from typer.testing import CliRunner

    from doctor.cli import app
    src = (Path(__file__).resolve().parent.parent / "fixtures" / "gpu" /
           "csvgpu-03-a100pcie-x2-header-units-555.txt").read_text()
    run = tmp_path / "run"
    run.mkdir()
    (run / "nvidia-smi-1.csv").write_text(src)
    busy = src.splitlines()
    busy[2] = busy[2].replace("0 %", "80 %").replace("40447 MiB, 1 MiB", "10960 MiB, 30000 MiB")
    (run / "nvidia-smi-2.csv").write_text("\n".join(busy) + "\n")
    res = CliRunner().invoke(app, ["analyze", str(run), "--format", "json"])
    gpus = _json.loads(res.stdout)["run"]["gpus"]
    assert [g["index"] for g in gpus] == [0, 1] and all(g["samples"] == 2 for g in gpus)
    assert gpus[1]["mem_used_max_mib"] == 30000 and gpus[1]["util_mean_pct"] == 40.0 and gpus[1]["util_max_pct"] == 80
    assert gpus[0]["mem_used_max_mib"] == 1 and gpus[0]["mem_total_mib"] == 40960


def test_preflight_with_live_nvml_sees_another_jobs_memory(monkeypatch):
    """Before launch, with no snapshot file, preflight samples the GPUs through NVML: those samples now reach the
    rules, so memory another job holds (the real H100 under load: process 432 with 31,722 MiB) is GD503 (before, the
    live samples only sized the memory plan and GD503 never fired)."""
    from doctor.preflight import preflight_command
    dump = json.loads((CAP / "nvml-load.json").read_text())
    monkeypatch.setitem(sys.modules, "pynvml", replay(dump))
    rep = preflight_command(["swift", "rlhf", "--rlhf_type", "grpo", "--model", "m", "--reward_funcs", "accuracy",
                             "--num_generations", "4", "--per_device_train_batch_size", "4"], {},
                            swift_version="4.6.0", live_gpu=True)
    gd503 = [f for f in rep.findings if f.rule_id == "GD503"]
    assert gd503 and "432" in " ".join(e.text for e in gd503[0].evidence) + gd503[0].message
    assert any(i.path == "<nvml>" and i.kind == "gpu" for i in rep.inputs)
