"""The cache folder keeps only the few most recently used files of each kind, and never touches anything else."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from doctor import cachefiles
from doctor.cachefiles import HS, RULES, WORDS


def _key(i: int) -> str:
    return f"{i:024x}"


def _put(folder: Path, name: str, mtime: int) -> Path:
    p = folder / name
    p.write_bytes(b"old")
    os.utime(p, (mtime, mtime))
    return p


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "grpo-doctor"
    folder.mkdir()
    return folder


def test_a_write_keeps_the_newest_of_its_kind(cache: Path) -> None:
    for i in range(10):
        _put(cache, RULES.name(_key(i)), 1_000_000 + i)
    cachefiles.write(RULES, _key(99), b"new")
    left = sorted(p.name for p in cache.glob("rules-*.json"))
    assert len(left) == RULES.keep
    # the file just written, then the newest older ones by mtime
    assert left == sorted([RULES.name(_key(99))] + [RULES.name(_key(i)) for i in range(10 - RULES.keep + 1, 10)])
    assert (cache / RULES.name(_key(99))).read_bytes() == b"new"


def test_the_file_just_written_stays_whatever_its_mtime(cache: Path, monkeypatch) -> None:
    for i in range(6):
        _put(cache, WORDS.name(_key(i)), 2_000_000_000 + i)   # far in the future: newer than anything written now
    cachefiles.write(WORDS, _key(42), b"[]")
    assert (cache / WORDS.name(_key(42))).exists()
    assert len(list(cache.glob("words-*.json"))) == WORDS.keep


def test_pruning_touches_only_its_own_kind_and_pattern(cache: Path, tmp_path: Path) -> None:
    others = [
        _put(cache, WORDS.name(_key(1)), 1000),             # another kind, older than every rules file
        _put(cache, HS.name(_key(2)), 1000),
        _put(cache, "rules-notahexkey.json", 1000),         # the prefix, not the pattern
        _put(cache, f"rules-{_key(3)}.json.123.tmp", 1000),  # a writer's temporary file
        _put(cache, f"RULES-{_key(4)}.json", 1000),
        _put(cache, f"rules-{_key(5)}.json.bak", 1000),
        _put(cache, "notes.txt", 1000),
    ]
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"not the cache's")
    os.utime(target, (1000, 1000))
    link = cache / RULES.name(_key(6))
    link.symlink_to(target)
    os.utime(link, (1000, 1000), follow_symlinks=False)
    folder_named_like_one = cache / RULES.name(_key(7))
    folder_named_like_one.mkdir()
    (folder_named_like_one / "inside").write_bytes(b"x")
    for i in range(10, 20):
        _put(cache, RULES.name(_key(i)), 1_000_000 + i)
    cachefiles.write(RULES, _key(99), b"new")
    assert all(p.exists() for p in others)
    assert link.is_symlink() and target.read_bytes() == b"not the cache's"
    assert (folder_named_like_one / "inside").exists()
    regular = [p for p in cache.iterdir() if RULES.owns(p.name) and p.is_file() and not p.is_symlink()]
    assert len(regular) == RULES.keep


def test_a_read_marks_the_file_as_used(cache: Path) -> None:
    used = _put(cache, RULES.name(_key(0)), 1000)
    assert cachefiles.read(RULES, _key(0)) == b"old"
    assert used.stat().st_mtime > 1000
    for i in range(1, 10):
        _put(cache, RULES.name(_key(i)), 1_000_000 + i)
    cachefiles.write(RULES, _key(99), b"new")
    assert used.exists()   # the oldest written, the most recently read: still there


def test_failures_to_write_or_prune_do_not_raise(cache: Path, tmp_path: Path, monkeypatch) -> None:
    for i in range(HS.keep + 4):
        _put(cache, HS.name(_key(i)), 1000 + i)

    def refuse(*a, **k):
        raise PermissionError("no")

    monkeypatch.setattr(os, "unlink", refuse)
    cachefiles.write(HS, _key(99), b"db")                    # written, nothing pruned
    assert (cache / HS.name(_key(99))).read_bytes() == b"db"
    assert len(list(cache.glob("hs-*.db"))) == HS.keep + 5
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(os, "scandir", refuse)
    cachefiles.write(HS, _key(98), b"db")                    # the folder cannot be listed
    assert (cache / HS.name(_key(98))).exists()
    monkeypatch.undo()
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))       # the cache folder cannot be made
    cachefiles.write(HS, _key(97), b"db")
    assert cachefiles.read(HS, _key(97)) is None


def test_analyze_prunes_the_rules_cache_and_still_reports(cache: Path, tmp_path: Path) -> None:
    from doctor.analyze import analyze
    from doctor.registry import load_catalog

    log = tmp_path / "run.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    ref = analyze([str(log)]).to_json()
    stale = [_put(cache, RULES.name(_key(i)), 1000 + i) for i in range(8)]
    for p in [*cache.glob("rules-*.json"), *cache.glob("catalog-*.marshal")]:
        if p not in stale:
            p.unlink()                                       # this catalog's files: the next load writes them again
    load_catalog.cache_clear()
    try:
        assert analyze([str(log)]).to_json() == ref
    finally:
        load_catalog.cache_clear()
    assert len(list(cache.glob("rules-*.json"))) == RULES.keep
    assert sum(p.exists() for p in stale) == RULES.keep - 1


def test_the_built_catalog_comes_back_the_same_and_a_recent_edit_bypasses_it(cache: Path, tmp_path: Path) -> None:
    import shutil
    import time

    from doctor import registry
    rules = tmp_path / "rules"
    shutil.copytree(registry.rules_dir(), rules)
    old = time.time() - 60
    for p in rules.rglob("*.toml"):
        os.utime(p, (old, old))
    registry.load_catalog.cache_clear()
    try:
        built = registry.load_catalog(str(rules))                           # built from the files, then kept
        assert len(list(cache.glob("catalog-*.marshal"))) == 1
        registry.load_catalog.cache_clear()
        for p in cache.glob("rules-*.json"):
            p.unlink()
        again = registry.load_catalog(str(rules))                           # from the kept build: no parse
        assert not list(cache.glob("rules-*.json"))
        assert [registry._dump(m) for m in again] == [registry._dump(m) for m in built]
        assert [type(p.regex) for m in again for p in m.patterns] == [type(p.regex) for m in built for p in m.patterns]
        # the records as their __init__ makes them (registry._record fills their __dict__): the same attributes in the
        # same order, equal but for the compiled-on-use regexes (compared by identity)
        for a, b in zip(again, built, strict=True):
            assert replace(a, patterns=(), exceptions=()) == replace(b, patterns=(), exceptions=())
            assert list(vars(a)) == list(vars(b)) and type(a) is type(b) and a.severity is b.severity
            for pa, pb in zip(a.patterns + a.exceptions, b.patterns + b.exceptions):
                assert list(vars(pa)) == list(vars(pb)) and type(pa) is type(pb)
        # an edit that keeps the file's size, just made: a file changed in the last seconds is read and parsed
        one = sorted(rules.glob("*/GD1*.toml"))[0]
        text = one.read_text(encoding="utf-8")
        at = text.index('title = "') + len('title = "')
        one.write_text(text[:at] + ("Y" if text[at] != "Y" else "Z") + text[at + 1:], encoding="utf-8")
        registry.load_catalog.cache_clear()
        assert registry._stat_key(registry.rule_files(rules)) is None
        edited = registry.find_rule(one.name.split("-")[0], registry.load_catalog(str(rules)))
        assert edited is not None and edited.title[0] in "YZ" and edited.title[0] != text[at]
        assert len(list(cache.glob("catalog-*.marshal"))) == 1                # nothing kept for the unsettled files
    finally:
        registry.load_catalog.cache_clear()
