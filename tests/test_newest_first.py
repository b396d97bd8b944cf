"""Metric rows pasted newest first are read in the order they were logged (doctor/sources/newest_first.py)."""
from __future__ import annotations

import subprocess
import sys

from doctor.sources.newest_first import newest_first_runs, reordered

TABLE = (b"Training loss becomes nan after a few steps\n"
         b"| Step | Training Loss | reward | kl |\n"
         b"|------|---------------|--------|----|\n"
         b"| 30 | nan | nan | nan |\n"
         b"| 20 | nan | nan | nan |\n"
         b"| 10 | 0.012300 | 0.35 | 0.0012 |\n")


def test_a_table_whose_steps_go_down_is_reversed_with_its_line_numbers():
    out = list(reordered(TABLE))
    assert [n for n, _ in out] == [1, 2, 3, 6, 5, 4]
    assert out[3][1].startswith(b"| 10 |")


def test_rows_that_go_up_or_two_runs_appended_are_left_alone():
    up = [b"{'loss': 0.1, 'epoch': 0.01}", b"{'loss': 0.2, 'epoch': 0.02}"]
    assert newest_first_runs(up) == []
    # the last row of one run, then a second run from its start: not newest first
    appended = [b"{'loss': 0.1, 'epoch': 2.9}", b"{'loss': 0.1, 'epoch': 3.0}", b"{'loss': 0.5, 'epoch': 0.01}",
                b"{'loss': 0.4, 'epoch': 0.02}"]
    assert newest_first_runs(appended) == []
    assert newest_first_runs(list(reversed(up))) == [(0, 2)]
    assert reordered(b"just a log line\nanother\n") is None
    # an nvidia-smi process row is no table of steps
    assert newest_first_runs([b"|    1   N/A  N/A   12345   C   python   1000MiB |",
                              b"|    0   N/A  N/A   12346   C   python   1000MiB |"]) == []


def test_analyze_reads_a_newest_first_table_as_logged(tmp_path):
    log = tmp_path / "paste.txt"
    log.write_bytes(TABLE)
    out = subprocess.run([sys.executable, "-m", "doctor", "analyze", str(log), "--isolated"], capture_output=True,
                         text=True).stdout
    # logged order: finite at step 10, NaN from step 20 on (read newest first it was "finite again after it")
    assert "from step 20 on" in out and "finite again" not in out
