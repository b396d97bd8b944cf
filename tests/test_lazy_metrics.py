"""A console run's row (signals.LazyMetrics): its dict is built on first read, from the run's values, and it reads,
compares, prints, copies and routes as the Metrics it stands for."""
from __future__ import annotations

import copy
import pickle

from doctor.signals import METRICS_TYPES, LazyMetrics, Metrics, Where, console_run_row


def _row() -> LazyMetrics:
    keys = ("loss", "grad_norm", "global_step/max_steps")
    values = [0.5, 1.0, "1/9", 0.25, float("nan"), "2/9"]
    return console_run_row((keys, values, 3), "log.txt", 7, 12, False)  # type: ignore[return-value]


def test_values_built_once_in_key_order() -> None:
    m = _row()
    assert type(m.lazy) is tuple
    v = m.values
    assert list(v.items())[0] == ("loss", 0.25) and list(v)[1:] == ["grad_norm", "global_step/max_steps"]
    assert v["global_step/max_steps"] == "2/9" and v["grad_norm"] != v["grad_norm"]
    assert m.values is v and m.lazy is v   # kept: the run's values are no longer held


def test_reads_as_the_metrics_it_stands_for() -> None:
    m = _row()
    plain = Metrics(dict(m.values), Where("log.txt", 7), 12, "console", False)
    assert isinstance(m, Metrics) and type(m) in METRICS_TYPES
    assert m == plain and plain == m and repr(m) == repr(plain)
    for other in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(other) is Metrics and repr(other) == repr(plain)   # a NaN copied is another NaN: not ==
    assert (m.where, m.seq, m.source, m.finite) == (Where("log.txt", 7), 12, "console", False)


def test_routed_to_the_metrics_rules() -> None:
    from doctor.engine import Session

    s = Session()
    metrics_rules = s._by_type[Metrics]
    assert metrics_rules and s._by_type[LazyMetrics] == metrics_rules
