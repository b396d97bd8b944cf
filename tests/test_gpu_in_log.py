"""nvidia-smi tables pasted among a log's or an issue's lines are read as GPU snapshots (sources/gpu_in_log.py), and
one process driving several GPUs is told from ranks waiting (checks/gpu: GD501 against GD504)."""
from __future__ import annotations

from doctor.analyze import analyze
from doctor.sources.gpu_in_log import tables_in

HEAD = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 460.32.03    Driver Version: 460.32.03    CUDA Version: 11.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|"""


def _gpu(index: int, used: int, util: int) -> str:
    return (f"|   {index}  Tesla V100-SXM2...  On   | 00000000:00:1{index}.0 Off |                    0 |\n"
            f"| N/A   43C    P0    72W / 300W |  {used:5d}MiB / 16160MiB |    {util:3d}%      Default |\n"
            "+-------------------------------+----------------------+----------------------+")


def _paste(*gpus: tuple[int, int, int], quote: str = "") -> str:
    table = "\n".join([HEAD] + [_gpu(*g) for g in gpus])
    return ("After setting CUDA_VISIBLE_DEVICES=0,1,2 only one GPU works; nvidia-smi shows:\n\n"
            + "\n".join(quote + line for line in table.splitlines()) + "\n\nIs this expected?\n")


def test_a_table_among_prose_is_read_with_the_pastes_line_numbers():
    lines = _paste((0, 13758, 94), (1, 4770, 0)).splitlines()
    (rows,) = tables_in(lines)
    assert [(s.index, s.mem_used_mib, s.util_pct) for s in rows] == [(0, 13758, 94), (1, 4770, 0)]
    assert lines[rows[1].line - 1].lstrip().startswith("|   1  Tesla")   # the GPU's own line of the paste
    # a markdown quote before every line, and a block of "|" lines that is no nvidia-smi table
    quoted = _paste((0, 13758, 94), (1, 4770, 0), quote="> ").splitlines()
    assert [s.index for s in tables_in(quoted)[0]] == [0, 1]
    assert tables_in(["| loss | reward |", "|---|---|", "| 0.1 | 0.5 |"]) == []


def test_one_process_driving_several_gpus_is_underuse_not_a_hang(tmp_path):
    # devlogs70/7335 (huggingface/transformers#12127): GPU 0 at 94% with 13.4 GiB, GPU 1 idle with 4.7 GiB
    log = tmp_path / "log.txt"
    log.write_text(_paste((0, 13758, 94), (1, 4770, 0), (2, 4770, 0)), encoding="utf-8")
    f = analyze([str(log)]).findings[0]
    assert (f.rule_id, f.category) == ("GD501", "gpu-underutilized")
    assert "GPU 1, 2 sit at 0-5% holding at most 4.7 GiB (35% of it" in f.message and "DataParallel" in f.message
    assert f.fix[0].startswith("Start one process per GPU")
    assert {e.line for e in f.evidence} == {9, 12, 15}   # each GPU's first line: prose, blank, six header lines


def test_ranks_holding_the_same_memory_while_one_works_stay_a_wait(tmp_path):
    # a distributed job's ranks hold about the same memory working or waiting: ranks waiting for a straggler
    log = tmp_path / "log.txt"
    log.write_text(_paste((0, 9174, 100), (1, 9178, 0), (2, 9178, 0)), encoding="utf-8")
    f = analyze([str(log)]).findings[0]
    assert f.rule_id == "GD504" and "ranks waiting for others" in f.message
