"""The scanning child's memory stays flat on a big log (issue 19 point 3).

The child maps the log and hands the pages behind its scan back to the kernel (``MADV_DONTNEED``). Two checks:
the pages of the mapping still resident once a real scan of a ~134 MB file is over (every page would be,
without the hand-back), and the margin handed back again below each release. Touching one page maps its whole
page-cache folio (up to 2 MiB where the kernel built large folios, e.g. for a log read before), so the bytes a
piece reads behind its start (the overlap of a word across the cut) mapped up to 2 MiB behind the last release
again, never handed back: on this project's dev machine the child of the 1 GiB realistic log ended at 188 MiB
RSS (48 MiB with the margin). Whether a file's folios are large depends on the kernel and on how the file was
read before, so the second check reads the releases themselves.
"""
from __future__ import annotations

import mmap
import os

import psutil
import pytest

from doctor.sources import matchers
from doctor.sources.scanchild import MappedScan

QUIET = b"[INFO:swift] step done, nothing to see here, padding padding padding padding padding\n"
HIT = b"Traceback (most recent call last):\n"
BLOCK = QUIET * 39 + HIT
REPS = 4096 * 10   # ~134 MB: without any hand-back all of it would stay mapped


def _log(path) -> int:
    """REPS blocks of 39 quiet lines and one line holding the trigger word."""
    with open(path, "wb") as f:
        chunk = BLOCK * 4096
        for _ in range(REPS // 4096):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
        if hasattr(os, "posix_fadvise"):  # read back from disk, as a log of a past run is: readahead's folios
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return os.path.getsize(path)


def _mapped_resident(mm: mmap.mmap, size: int) -> int:
    """RSS freed by handing the whole mapping back: the mapping's pages still resident."""
    proc = psutil.Process()
    before = proc.memory_info().rss
    mm.madvise(mmap.MADV_DONTNEED, 0, size)
    return before - proc.memory_info().rss


@pytest.mark.skipif(not hasattr(mmap, "MADV_DONTNEED"), reason="needs madvise(MADV_DONTNEED)")
def test_scan_leaves_no_pages_behind(tmp_path):
    try:
        m = matchers.HyperscanMatcher(["Traceback"])
    except ImportError:  # no Hyperscan here: the forked child is never used
        pytest.skip("the scanning child needs Hyperscan")
    path = tmp_path / "big.log"
    size = _log(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        scan = MappedScan(mm, size, m._db, m._scratch, 8 << 20, m.max_len - 1)
        found = sum(len(batch) // 3 for batch in scan.batches())
        assert found == REPS and scan.lines == REPS * 40
        resident = _mapped_resident(mm, size)
        scan.close()
        mm.close()
    finally:
        os.close(fd)
    # one 8 MiB piece, its overlap and look-ahead, and the margin released again: well under 40 MiB
    assert resident < 40 << 20, f"{resident >> 20} MiB of the log still mapped after the scan"


class _Recording(mmap.mmap):
    """A real read-only mapping that records its madvise calls."""

    def __init__(self, *args, **kwargs):
        self.calls: list[tuple[int, int]] = []

    def madvise(self, option, start=0, length=None):
        if option == mmap.MADV_DONTNEED:
            self.calls.append((start, start + length))
        return super().madvise(option, start, length)


@pytest.mark.skipif(not hasattr(mmap, "MADV_DONTNEED"), reason="needs madvise(MADV_DONTNEED)")
def test_each_release_covers_the_bytes_read_behind_it(tmp_path, monkeypatch):
    try:
        m = matchers.HyperscanMatcher(["Traceback"])
    except ImportError:
        pytest.skip("the scanning child needs Hyperscan")
    monkeypatch.setattr(MappedScan, "BACK", 64 << 10)
    path = tmp_path / "log"
    path.write_bytes((QUIET * 9 + HIT) * 4000)   # ~3.3 MB
    size = path.stat().st_size
    chunk = 256 << 10
    with open(path, "rb") as f:
        mm = _Recording(f.fileno(), size, access=mmap.ACCESS_READ)
        scan = MappedScan(mm, size, m._db, m._scratch, chunk, m.max_len - 1)
        assert sum(len(b) // 3 for b in scan.batches()) == 4000
        scan.close()
        calls = mm.calls
        mm.close()
    ends = [b for _, b in calls]
    assert ends == sorted(ends) and ends[-1] >= size - size % mmap.PAGESIZE - chunk
    # after the first, every release starts BACK below the end of the one before: the overlap each piece read
    # behind its start (and the folio it mapped) is handed back again
    for (a, _), prev_end in zip(calls[1:], ends):
        assert a == max(0, prev_end - (64 << 10)), (a, prev_end)
