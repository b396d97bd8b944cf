"""doctor/lazyre.py: patterns compiled on first use behave as compiled ones, and every module-level pattern of the
package still compiles (a typo in a rarely used one would otherwise show only on the line that first needs it)."""
from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import doctor
from doctor import lazyre


def test_not_compiled_until_used_then_plain_attributes():
    rx = lazyre.compile(r"(?P<n>\d+) steps", re.I)
    assert "search" not in vars(rx)
    m = rx.search("ran 12 STEPS")
    assert m and m.group("n") == "12"
    assert "search" in vars(rx)          # later lookups are attributes, not __getattr__
    assert rx.pattern == r"(?P<n>\d+) steps" and rx.flags & re.I and rx.groups == 1
    assert rx.sub("N", "3 steps") == "N" and rx.fullmatch("4 steps") and not rx.match("x 4 steps")
    assert [m.group(0) for m in rx.finditer("1 steps, 2 steps")] == ["1 steps", "2 steps"]


def test_a_bad_pattern_fails_at_first_use():
    rx = lazyre.compile(r"(unclosed")
    with pytest.raises(re.error):
        rx.search("x")


def _lazy_in(value, depth=0):
    if isinstance(value, lazyre.LazyPattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _lazy_in(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _lazy_in(v, depth + 1)


def test_every_module_pattern_compiles():
    found = 0
    for info in pkgutil.walk_packages(doctor.__path__, "doctor."):
        try:
            mod = importlib.import_module(info.name)
        except ImportError:   # an optional dependency (mcp) absent: its module holds no pattern others use
            continue
        spaces = [vars(mod)] + [vars(v) for v in vars(mod).values() if isinstance(v, type) and v.__module__ == mod.__name__]
        for space in spaces:
            for value in list(space.values()):
                for rx in _lazy_in(value):
                    assert rx.pattern is not None   # compiles it; re.error names the pattern otherwise
                    found += 1
    assert found > 300, found   # the package holds ~490: the walk does reach them


def test_a_compiled_pattern_comes_back_from_the_cache_file(tmp_path, monkeypatch):
    # one process compiles and records the pattern; the next builds it from the cache file, equal to re.compile's
    import atexit
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(atexit, "register", lambda fn: fn)   # _save is called here, not at the test run's exit
    monkeypatch.setattr(lazyre, "_table", None)
    monkeypatch.setattr(lazyre, "_new", {})
    pat = r"(?P<n>\d+) (?:unusual)? steps?\b"
    assert lazyre.compiled(pat, re.I) == re.compile(pat, re.I)
    assert (pat, int(re.I)) in lazyre._new
    lazyre._save()
    monkeypatch.setattr(lazyre, "_table", None)
    monkeypatch.setattr(lazyre, "_new", {})
    rx = lazyre.compiled(pat, re.I)
    assert not lazyre._new   # found in the file: not compiled again
    assert rx == re.compile(pat, re.I) and rx.groupindex == {"n": 1} and rx.flags == re.compile(pat, re.I).flags
    assert rx.search("ran 12 Unusual STEPS").group("n") == "12"


def test_a_damaged_cache_file_costs_only_the_compiling(tmp_path, monkeypatch):
    from doctor import cachefiles
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(lazyre, "_table", None)
    monkeypatch.setattr(lazyre, "_new", {})
    monkeypatch.setattr(lazyre, "_save", lambda: None)
    cachefiles.write(cachefiles.REGEX, lazyre._key(), b"\x00not marshal")
    assert lazyre.compiled(r"a+b", 0) == re.compile(r"a+b")
    import marshal
    lazyre._table[("x+", 0)] = marshal.dumps((0, [1, 2, 3], 0, {}, ()))   # an entry _sre refuses: compiled by re
    assert lazyre.compiled(r"x+", 0) == re.compile(r"x+")


def test_raise_site_templates_come_back_from_their_own_file(tmp_path, monkeypatch):
    # the raise-site templates' patterns (classify/raise_sites.py) are kept apart from the package's own: a start reads
    # only the package's file, a failed run's lookups read theirs; the file starts over past SITE_MAX entries
    import atexit

    from doctor import cachefiles
    from doctor.classify.raise_sites import index
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(atexit, "register", lambda fn: fn)
    monkeypatch.setattr(lazyre, "_site_table", None)
    monkeypatch.setattr(lazyre, "_site_new", {})
    monkeypatch.setattr(lazyre, "_new", {})
    sites = index().candidates({"divisible"}, False)[:20]
    assert sites
    for s in sites:
        s._rx.clear()   # built by an earlier test of this process: built again here
    pats = [(s.regex(nows), s.regex(nows, third_party=False)) for s in sites for nows in (False, True)]
    for third, mine in pats:
        assert mine == re.compile(mine.pattern, re.S) and mine.flags == re.compile(mine.pattern, re.S).flags
        assert third.pattern == mine.pattern   # the `regex` module's build of the same text
    assert len(lazyre._site_new) == len({m.pattern for _, m in pats}) and not lazyre._new
    lazyre._site_save()
    assert cachefiles.read_table(cachefiles.SITE_REGEX, lazyre._key()).keys() == lazyre._site_new.keys()
    assert not cachefiles.read_table(cachefiles.REGEX, lazyre._key())
    monkeypatch.setattr(lazyre, "_site_table", None)
    monkeypatch.setattr(lazyre, "_site_new", {})
    for _, mine in pats:
        rx = lazyre.site_compiled(mine.pattern, re.S)
        assert rx == mine and rx.groupindex == mine.groupindex
    assert not lazyre._site_new   # every one from the file
    monkeypatch.setattr(lazyre, "SITE_MAX", 1)
    lazyre.site_compiled(r"(\d+) more", re.S)
    lazyre._site_save()
    assert list(cachefiles.read_table(cachefiles.SITE_REGEX, lazyre._key())) == [(r"(\d+) more", int(re.S))]
