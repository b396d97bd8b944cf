"""Rules built on their first signal (doctor/lazyrules.py, what watch uses): the same findings as rules built at start.

A LazyRule fed nothing finishes with nothing, which is right only for a rule class that declares so
(``Rule.idle_silent``): each such rule, built fresh and fed nothing, is finished on the state of every golden log
here and must say nothing. Then every golden log is analysed with lazy rules and compared with the golden report.
"""
from __future__ import annotations

import functools
import json

import pytest
from golden import cases, golden_path, report_for

from doctor import cachefiles, lazyrules
from doctor.engine import session as session_mod
from doctor.registry import load_catalog
from doctor.rules import Rule, build_rule

CASES = cases()


def _routed() -> list:
    """The catalog's rules a LazyRule stands in for (the table written first when the cache has none)."""
    lazyrules.build(load_catalog())
    return [r for r in lazyrules.build(load_catalog()) if isinstance(r, lazyrules.LazyRule)]


def test_some_rules_wait_for_their_signal():
    lazy = _routed()
    ids = {r.meta.id for r in lazy}
    # GPU samples, checkpoints, an exception: rules that a run without them never needs
    assert {"GD201", "GD501", "GD802"} <= ids, ids
    for r in lazy:
        real = build_rule(r.meta)
        assert getattr(type(real), "idle_silent", False) and type(real).share is Rule.share
        assert (r.kinds, r.literals, r.wants_all_lines, r.per_run) == (
            real.kinds, tuple(real.literals), real.wants_all_lines, real.per_run), r.meta.id
        assert not r.built
    # a session of the whole catalog, as watch builds it
    s = session_mod.Session(load_catalog(), lazy=True)
    assert sum(isinstance(r, lazyrules.LazyRule) for r in s.rules) == len(lazy)


def test_a_lazy_rule_is_built_by_its_first_signal_and_finishes_as_the_real_one():
    from conftest import feed_text
    s = session_mod.Session(load_catalog(), lazy=True)
    oom = next(r for r in s.rules if r.meta.id == "GD201")
    assert isinstance(oom, lazyrules.LazyRule) and not oom.built
    feed_text(s, "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                 "of 79.15 GiB of which 1.06 GiB is free.\n")
    eager = session_mod.Session(load_catalog())
    feed_text(eager, "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.15 GiB of which 1.06 GiB is free.\n")
    assert oom.built
    assert [f.rule_id for f in s.finish()] == [f.rule_id for f in eager.finish()]
    assert "GD201" in [f.rule_id for f in s.finish()]


def test_a_routing_table_of_other_code_is_not_used(tmp_path):
    lazyrules.build(load_catalog())
    key = lazyrules._key(None)
    table = cachefiles.read_table(cachefiles.ROUTES, key)
    assert table["routes"]
    path, size, mtime = table["modules"][0]
    # a module of the package changed since the table was written: every rule is built at start
    table["modules"][0] = (path, size + 1, mtime)
    import marshal
    cachefiles.write(cachefiles.ROUTES, key, marshal.dumps(table))
    rules = lazyrules.build(load_catalog())
    assert not any(isinstance(r, lazyrules.LazyRule) for r in rules)
    assert any(isinstance(r, lazyrules.LazyRule) for r in lazyrules.build(load_catalog()))   # written anew


@pytest.fixture(scope="module")
def idle_silent_metas():
    _routed()
    return [m for m in load_catalog() if m.check and getattr(type(build_rule(m)), "idle_silent", False)]


@pytest.mark.parametrize("case", CASES)
def test_idle_silent_rules_say_nothing_unfed(case, idle_silent_metas, monkeypatch):
    """The declaration each idle_silent class makes, checked on the run state of every golden log."""
    orig = session_mod.Session.finish
    said: list[str] = []

    def finish(self, *a, **kw):
        out = orig(self, *a, **kw)
        for m in idle_silent_metas:
            said.extend(f"{m.id}: {f.message[:80]}" for f in build_rule(m).finish(self.state))
        return out

    monkeypatch.setattr(session_mod.Session, "finish", finish)
    report_for(case)
    assert not said


@pytest.mark.parametrize("case", CASES)
def test_lazy_rules_give_the_golden_report(case, monkeypatch):
    from doctor import analyze as analyze_mod
    _routed()
    monkeypatch.setattr(analyze_mod, "Session", functools.partial(session_mod.Session, lazy=True))
    assert report_for(case) == json.loads(golden_path(case).read_text(encoding="utf-8"))
