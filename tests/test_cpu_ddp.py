"""GD415: several CPU processes without --use_cpu true, on the real run's log (the minimal lines and the near misses
are cases in rules/args/cases.toml)."""
from __future__ import annotations

from conftest import FIXTURES
from test_hang import ids, run

REAL = FIXTURES / "real-ddp2-cpu-gloo-shape-error-child-failed" / "log.txt"


def test_real_log_is_named():
    found = run(REAL.read_text(encoding="utf-8"))
    assert ids(found)[0] == "GD415"
    f = found[0]
    assert "2 processes" in f.message and "groups of 4" in f.message
    assert f.fix[0].startswith("Add --use_cpu true")
    assert "--per_device_train_batch_size 4" in f.fix[1]     # 2 ranks x 2 per rank, by hand
