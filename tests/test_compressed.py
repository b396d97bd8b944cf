"""Compressed logs are read transparently, as a stream (doctor/sources/compressed.py).

The log is a real ms-swift 4.6.0 GRPO run on CPU whose reward function raised (fixtures/logs/
real-dataset-missing-solution-column, its provenance.toml): GD606 at line 775. Each codec must give the same
report as the plain file; a cut stream gives what came before the cut and says so; a format the tool does not
read is one line with the command that reads it.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from doctor.analyze import analyze
from doctor.cli import app
from doctor.sources.compressed import _Decoded, decompressing

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real-dataset-missing-solution-column"
LOG = (CASE / "log.txt").read_bytes()


def _key(rep) -> list[tuple[str, int]]:
    return [(f.rule_id, f.evidence[0].line if f.evidence else 0) for f in rep.findings]


@pytest.mark.parametrize("suffix,pack", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_each_codec_reads_like_the_plain_log(tmp_path, suffix, pack):
    plain = tmp_path / "train.log"
    plain.write_bytes(LOG)
    packed = tmp_path / f"train.log{suffix}"
    packed.write_bytes(pack(LOG))
    want = _key(analyze([str(plain)]))
    assert want[0] == ("GD606", 775)
    assert _key(analyze([str(packed)])) == want


def test_zstd_when_the_package_is_there(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    packed = tmp_path / "train.log.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(LOG))
    assert _key(analyze([str(packed)]))[0] == ("GD606", 775)


def test_zstd_without_the_package_is_one_line_with_the_way_out(tmp_path, monkeypatch):
    packed = tmp_path / "train.log.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 64)
    monkeypatch.setitem(sys.modules, "zstandard", None)   # import fails as when it is not installed
    res = CliRunner().invoke(app, ["analyze", str(packed)])
    assert res.exit_code == 2
    assert "zstd-compressed; pip install zstandard, or: zstd -dc" in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("magic,codec,how", [(b"PK\x03\x04", "zip", "unzip -p"), (b"\x04\x22\x4d\x18", "lz4", "lz4 -dc")])
def test_unread_formats_say_how_to_read_them(tmp_path, magic, codec, how):
    f = tmp_path / "train.log"
    f.write_bytes(magic + b"\x00" * 100)
    res = CliRunner().invoke(app, ["analyze", str(f)])
    assert res.exit_code == 2
    assert f"{codec}-compressed, which grpo-doctor does not read; {how}" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_run_folder_with_compressed_log_and_metrics(tmp_path):
    run = tmp_path / "v0-20261122-220000"
    run.mkdir()
    (run / "log.txt.gz").write_bytes(gzip.compress(LOG))
    (run / "logging.jsonl.gz").write_bytes(gzip.compress((CASE / "logging.jsonl").read_bytes()))
    (run / "dataset.jsonl.gz").write_bytes(gzip.compress(b'{"messages": []}\n'))   # not an input of the run
    rep = analyze([str(run)])
    kinds = {Path(i.path).name: i.kind for i in rep.inputs}
    assert kinds == {"log.txt.gz": "log", "logging.jsonl.gz": "metrics"}
    assert _key(rep)[0] == ("GD606", 775)
    assert rep.run["framework"] == "ms-swift"   # the launch line read from the decompressed head


def test_gzip_on_standard_input(tmp_path):
    p = subprocess.run([sys.executable, "-m", "doctor.cli", "analyze", "-", "--format", "json"],
                       input=gzip.compress(LOG), capture_output=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["findings"][0]["rule_id"] == "GD606"


def test_a_cut_stream_gives_what_came_before_and_says_so(tmp_path):
    whole = gzip.compress(LOG)
    cut = tmp_path / "train.log.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    rep = analyze([str(cut)])
    (info,) = rep.inputs
    assert info.note.startswith("read in part: the compressed stream ends before its end marker")
    decoded = decompressing(io.BytesIO(whole[: len(whole) // 2]), "gzip", "x").read()
    assert len(decoded) > len(LOG) // 3 and LOG.startswith(decoded)   # every byte before the cut, none invented
    res = CliRunner().invoke(app, ["analyze", str(cut)])
    assert "train.log.gz (log: read in part" in res.output


def test_concatenated_members_are_one_log():
    two = gzip.compress(b"first\n") + gzip.compress(b"second\n")
    assert decompressing(io.BytesIO(two), "gzip", "x").read() == b"first\nsecond\n"


def test_each_read_is_bounded_whatever_the_ratio():
    bomb = gzip.compress(b"\n" * (64 * 1024 * 1024))   # 64 MiB of newlines in ~64 KiB
    raw = _Decoded(io.BytesIO(bomb), "gzip")
    buf = bytearray(4096)
    sizes = [raw.readinto(buf) for _ in range(50)]
    assert max(sizes) <= 4096 and min(sizes) > 0


def test_a_gz_name_on_plain_text_is_read_as_text(tmp_path):
    f = tmp_path / "train.log.gz"
    shutil.copy(CASE / "log.txt", f)
    assert _key(analyze([str(f)]))[0] == ("GD606", 775)


def test_a_zstd_magic_over_plain_text_is_read_in_part_not_a_traceback(tmp_path):
    # found by tests/fuzz (test_watch_live_inputs): zstandard raises its own ZstdError ("Dictionary mismatch"), neither
    # an OSError nor a ValueError, when the bytes after the magic are no zstd frame
    pytest.importorskip("zstandard")
    log = tmp_path / "log.txt"
    log.write_bytes(b"(\xb5/\xfd" + b"ValueError: generation_batch_size (0) must be divisible by num_generations (0).\n")
    p = subprocess.run([sys.executable, "-m", "doctor", "analyze", str(log)], capture_output=True, text=True)
    assert p.returncode == 0 and "Traceback" not in p.stderr
    assert "read in part: the compressed data is damaged" in " ".join(p.stdout.split())  # the report wraps lines
