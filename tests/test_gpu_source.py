"""nvidia-smi snapshots: every real sample parses (or is refused with one line), and values read by hand from
the files come out right; unreadable values are None, never 0."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from doctor.sources.gpu import SnapshotError, merge, parse_snapshot, parse_text, sample_nvml, sniff

GPU = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"
READABLE = sorted(p.name for p in GPU.glob("*.txt") if p.name.startswith(("table-", "query-", "csvgpu-", "csvapps-"))
                  and not p.name.startswith("csvgpu-11"))
NOT_SUPPORTED = sorted(p.name for p in GPU.glob("*.txt") if p.name.startswith(("dmon-", "pmon-", "topo-")))


@pytest.mark.parametrize("name", READABLE)
def test_every_real_sample_parses(name):
    samples = parse_snapshot(GPU / name)
    if name.startswith("csvapps-02"):
        assert samples == []  # header only: nothing running
        return
    assert samples
    for s in samples:
        assert s.mem_used_mib is None or s.mem_used_mib >= 0
        assert s.util_pct is None or 0 <= s.util_pct <= 100


@pytest.mark.parametrize("name", sorted(p.name for p in (GPU / "h100-capture").iterdir() if p.name != "README.txt"))
def test_every_h100_capture_parses(name):
    samples = parse_snapshot(GPU / "h100-capture" / name)
    assert name.startswith("csvapps-idle") or samples


@pytest.mark.parametrize("name", NOT_SUPPORTED + ["csvgpu-11-invalid-field-error-595.txt"])
def test_unsupported_outputs_are_refused_in_one_line(name):
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(GPU / name)
    assert "\n" not in str(e.value) and name in str(e.value)


def test_table_values_read_by_hand():
    s = parse_snapshot(GPU / "table-01-a100x8-mixed-idle-busy-595.txt")
    assert [g.index for g in s] == list(range(8))
    g0, g3 = s[0], s[3]
    assert (g0.name, g0.bus_id, g0.mem_used_mib, g0.mem_total_mib, g0.util_pct, g0.temp_c, g0.power_w,
            g0.power_cap_w, g0.perf_state) == ("NVIDIA A100-SXM4-80GB", "00000000:27:00.0", 72297, 81920, 11, 49,
                                               114, 400, "P0")
    assert g0.ecc_volatile_uncorrected == 0 and g0.mig is False
    assert [(p.pid, p.mem_mib) for p in g0.processes] == [(2010386, 72288)]
    assert (g3.mem_used_mib, g3.util_pct, g3.processes) == (0, 0, ())


def test_err_row_is_unknown_not_zero():
    s = parse_snapshot(GPU / "table-05-a30x8-err-gpu-busy-mixed-525.txt")
    g3 = next(g for g in s if g.index == 3)
    assert g3.error == "ERR!"
    assert (g3.temp_c, g3.power_w, g3.util_pct, g3.name) == (None, None, None, None)
    assert (g3.mem_used_mib, g3.mem_total_mib) == (23025, 24576)  # the memory column was still readable
    assert g3.processes is None  # the poster left the Processes box out


def test_lost_gpu_line_and_missing_index():
    s = parse_snapshot(GPU / "table-06-rtxpro6000x4-gpu1-lost-unknown-error-610.txt")
    assert [g.index for g in s] == [0, 1, 2, 3]
    assert s[1].error == "Unknown Error" and s[1].bus_id == "0000:34:00.0" and s[1].mem_used_mib is None
    assert s[0].temp_c == 87 and s[0].processes[0].name == "VLLM::Worker_TP1"


def test_mig_table_util_na():
    g = parse_snapshot(GPU / "table-09-h100-mig-load-590.txt")[0]
    assert g.util_pct is None and g.mig is True and g.mem_used_mib == 11125


def test_query_values_read_by_hand():
    s = parse_snapshot(GPU / "query-06-a100x4-dram-ecc-remap-pending-555.txt")
    assert len(s) == 4
    g = next(x for x in s if x.bus_id == "00000000:9E:00.0")
    assert (g.ecc_volatile_corrected, g.ecc_volatile_uncorrected, g.remapped_pending, g.remap_failed) == (353, 0, True,
                                                                                                         False)
    assert g.retired_pages is None  # "Single Bit ECC : N/A"
    assert (g.mem_total_mib, g.power_cap_w, g.throttle_reasons) == (81920, 500, ())
    h = parse_snapshot(GPU / "h100-capture" / "query-load.txt")[0]
    assert (h.mem_used_mib, h.util_pct, h.temp_c, h.throttle_reasons) == (31731, 100, 66, ("SW Power Cap",))
    assert [(p.pid, p.name, p.mem_mib) for p in h.processes] == [(432, "python3", 31722)]


def test_query_section_only_outputs():
    ecc = parse_snapshot(GPU / "query-04-a100pcie-x2-ecc-section-555.txt")
    assert len(ecc) == 2 and ecc[0].mem_used_mib is None and ecc[0].ecc_volatile_uncorrected == 0
    perf = parse_snapshot(GPU / "query-05-a100pcie-x2-performance-section-555.txt")
    assert perf[0].throttle_reasons == ()  # only Idle is Active


def test_csv_with_and_without_header():
    a = parse_snapshot(GPU / "csvgpu-02-a100x8-header-mixed-held-memory.txt")
    assert (a[1].index, a[1].mem_used_mib, a[1].mem_total_mib, a[1].util_pct) == (1, 77105, 81920, 0)
    b = parse_snapshot(GPU / "csvgpu-04-a40x8-noheader-idle-and-held-memory.txt")
    # header-less: the constant MiB column is the total, whichever order the fields were queried in
    assert (b[2].mem_used_mib, b[2].mem_total_mib, b[2].util_pct) == (7, 46068, 0)
    c = parse_snapshot(GPU / "csvgpu-08-a100x8-noheader-compute-mode.txt")
    assert c[3].util_pct == 0 and c[3].mem_used_mib is None  # one MiB column: used or total cannot be told
    d = parse_snapshot(GPU / "csvgpu-10-rtxpro6000x4-noheader-nounits-bracket-na-hex-595.txt")
    assert d[0].throttle_reasons == ("SW Power Cap",) and d[0].mig is None  # [N/A] -> None
    e = parse_snapshot(GPU / "h100-capture" / "csvgpu-load-header-units.txt")[0]
    assert (e.power_w, e.power_cap_w, e.retired_pending, e.throttle_reasons) == (698.18, 700.0, None, ("SW Power Cap",))


def test_compute_apps_csv_and_merge():
    apps = parse_snapshot(GPU / "csvapps-05-rtxpro6000x4-noheader-nounits-shared-pid-595.txt")
    pids = sorted(p.pid for s in apps for p in s.processes)
    assert pids.count(377306) == 2  # one PID on two GPUs
    w = parse_snapshot(GPU / "csvapps-03-rtx2080s-windows-na-memory-610.txt")
    assert len(w[0].processes) == 21 and all(p.mem_mib is None for p in w[0].processes)
    gpus = parse_snapshot(GPU / "h100-capture" / "csvgpu-load-header-units.txt")
    apps = parse_snapshot(GPU / "h100-capture" / "csvapps-load.txt")
    m = merge(gpus + apps)
    assert len(m) == 1 and [(p.pid, p.mem_mib) for p in m[0].processes] == [(432, 31722)]


def test_nvml_dump_json():
    g = parse_snapshot(GPU / "h100-capture" / "nvml-load.json")[0]
    assert g.retired_pending is None  # "unsupported: Not Supported" -> unknown
    assert g.throttle_reasons == ("SW Power Cap",) and round(g.power_w, 1) == 698.2
    assert round(g.mem_total_mib) == 81559


def test_sniff_and_refusal():
    assert sniff("hello world\n") is None
    # a log whose every line carries Ray's "(pid=N, ip=A)" prefix (a comma on each line) and names a GPU is no CSV
    # (fixtures/devlogs35/3829 under bench/mutate.py's ray_prefix was read as one and gave no finding)
    ray = ("(pid=4242, ip=10.0.3.7) webui chat GPU-Util 10%, slow\n"
           "(pid=4242, ip=10.0.3.7) torch.cuda.get_device_name(0) / NVIDIA GeForce RTX 2080 Ti\n")
    assert sniff(ray) is None
    assert sniff("(pid=4242, ip=10.0.3.7) - GPU type: NVIDIA GeForce GTX 1080\n(pid=4242, ip=10.0.3.7) - Python 3.12\n") is None
    assert sniff("0, NVIDIA A100-SXM4-80GB, 81920 MiB, 1024 MiB, 0 %\n1, NVIDIA A100-SXM4-80GB, 81920 MiB, 2 MiB, 0 %\n") \
        == "csv"
    with pytest.raises(SnapshotError):
        parse_text("just a log line\n", "x.txt")


def test_no_driver_is_none_and_said_once(capfd):
    # this machine has no NVIDIA driver: NVML cannot initialise
    assert sample_nvml() is None
    assert sample_nvml() is None
    err = capfd.readouterr().err
    assert err.count("grpo-doctor:") == 1


def test_help_does_not_import_pynvml():
    code = "import sys, doctor.cli; sys.argv=['grpo-doctor','--help']\ntry:\n doctor.cli.main()\nexcept SystemExit: pass\n" \
           "print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("False")
