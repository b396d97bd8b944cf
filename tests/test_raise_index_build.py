"""tools/build_raise_index.py on real source files of two trl and two ms-swift releases (fixtures/raise-index/src,
copied unchanged from the PyPI wheels named in fixtures/raise-index/PROVENANCE.toml), and the template reader."""
from __future__ import annotations

import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "fixtures" / "raise-index" / "src"
sys.path.insert(0, str(ROOT / "tools"))

import build_raise_index as bri
from raise_index_ast import sites

from doctor.classify import raise_sites as rs
from doctor.classify import raise_store as rs_store

LIST = """updated = "2025-01-02"
[[package]]
name = "trl"
import = "trl"
kind = "wheel"
versions = ["0.18.2", "0.20.0"]

[[package]]
name = "ms-swift"
import = "swift"
kind = "wheel"
versions = ["4.5.3", "4.6.0"]
"""


def _files(name: str, version: str) -> list[tuple[str, bytes]]:
    """(path inside the package, bytes) of a fixture release's .py files, in a fixed order."""
    top = SRC / f"{name}-{version}"
    return [(f.relative_to(top).as_posix(), f.read_bytes()) for f in sorted(top.rglob("*.py"))]


class DirFetcher:
    """Stands in for the PyPI download: wheels zipped from the fixture sources."""

    def __init__(self, tmp: Path):
        self.tmp = tmp

    def path(self, name: str, version: str, kind: str) -> Path:
        return self.archive(name, version, f"{name.replace('-', '_')}-{version}-py3-none-any.whl",
                            _files(name, version))

    def archive(self, name: str, version: str, filename: str, entries: list[tuple[str, bytes]]) -> Path:
        """The cached download ``filename`` of a release, written once from ``entries`` (path in the archive, bytes):
        a zip for a wheel, a gzip'd tar for an sdist."""
        out = self.tmp / "cache" / name / version / filename
        if out.exists():
            return out
        out.parent.mkdir(parents=True)
        if filename.endswith(".tar.gz"):
            with tarfile.open(out, "w:gz") as t:
                for arcname, data in entries:
                    info = tarfile.TarInfo(arcname)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        else:
            with zipfile.ZipFile(out, "w") as z:
                for arcname, data in entries:
                    z.writestr(arcname, data)
        return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("raise-index")
    lst = tmp / "packages.toml"
    lst.write_text(LIST)
    data, meta = bri.build(lst, jobs=1, fetcher=DirFetcher(tmp))
    out = tmp / "index.idx"
    out.write_bytes(data)
    again, _ = bri.build(lst, jobs=1, fetcher=DirFetcher(tmp))  # second run: from the per-release cache
    return data, again, meta, rs.index(out)


def _rows(idx, **want):
    return [s.row for s in idx.sites if all(s.row[["package", "versions", "module", "where", "kind", "template"]
                                                     .index(k)] == v for k, v in want.items())]


def test_rebuild_is_byte_identical_and_records_how(built):
    data, again, meta, idx = built
    assert data == again
    assert data.startswith(rs_store.MAGIC)
    assert idx.meta["updated"] == "2025-01-02"
    assert idx.meta["versions"] == {"trl": ["0.18.2", "0.20.0"], "ms-swift": ["4.5.3", "4.6.0"]}
    assert meta["sites_per_package"]["trl"] >= 10 and meta["sites_per_package"]["ms-swift"] >= 30


def test_versions_merge_into_ranges(built):
    idx = built[3]
    both = _rows(idx, package="trl", template="'generation_batch_size' and 'steps_per_generation' can not be both "
                                              "configured at the same time")
    assert [r[1] for r in both] == ["0.18-0.20"]
    assert {r[1] for r in idx_pkg(idx, "trl")} >= {"0.18", "0.20", "0.18-0.20"}  # some wordings changed in 0.20
    assert {r[1] for r in idx_pkg(idx, "ms-swift")} >= {"4.5-4.6"}


def idx_pkg(idx, pkg):
    return [s.row for s in idx.sites if s.row[0] == pkg]


@pytest.mark.parametrize("module, kind, template", [
    # f-string
    ("trl/trainer/grpo_config.py", "ValueError",
     "generation_batch_size ({any}) must be divisible by the global batch size ({any})."),
    # str.format
    ("swift/megatron/trainers/batch_sampler.py", "AssertionError", "no sample to consume: {any}"),
    # "..." % (...) with %r
    ("swift/ray/megatron/pipeline.py", "ValueError", "Unknown rlhf_type {quoted}. Available: {any}"),
    # logger.warning("... %d ...", x)
    ("swift/ray/megatron/pipeline.py", "warning",
     "sleep_level={int} ignored in separate mode (vLLM stays resident). Overriding to 0."),
    # warnings.warn(msg, UserWarning)
    ("trl/core.py", "UserWarning", None),
    # assert cond, f"..."
    ("swift/arguments/rlhf_args.py", "AssertionError", None),
])
def test_every_formatting_kind_of_the_real_sources(built, module, kind, template):
    rows = [r for r in built[3].sites if r.row[2] == module and r.row[4] == kind]
    assert rows, (module, kind)
    if template is not None:
        assert template in {r.row[5] for r in rows}


def test_generic_templates_are_dropped(built):
    for s in built[3].sites:
        assert bri.literal_words(s.row[5]) >= bri.MIN_WORDS
        assert not bri.BUILTIN_LIKE.search(s.row[5])


def test_the_builder_reads_hole_names(built):
    row = _rows(built[3], package="trl", template="generation_batch_size ({any}) must be divisible by the global "
                                                   "batch size ({any}).")[0]
    assert row[6] == ["self.generation_batch_size", "self.per_device_train_batch_size * num_processes"]


def test_the_builder_records_the_condition_that_leads_to_a_site(built):
    """trl 0.20 grpo_config.py lines 584-588: the raise sits in an `if` inside an `elif` branch; both tests are kept,
    the outer first (read by hand from the fixture source)."""
    row = _rows(built[3], package="trl", template="generation_batch_size ({any}) must be divisible by the global "
                                                   "batch size ({any}).")[0]
    assert row[7] == ("self.generation_batch_size is not None and self.steps_per_generation is None and "
                      "self.generation_batch_size % (self.per_device_train_batch_size * num_processes) != 0")


_GUARDED = """
def check(a, b):
    if a is None:
        raise ValueError("a is missing here")
    if b > 3:
        raise ValueError("b is too large here")
    elif not ready(b):
        raise ValueError("b is not ready here")
    else:
        logger.warning("b is fine at %d", b)
    try:
        load(a)
    except (KeyError, IndexError):
        raise RuntimeError("the lookup failed here")
    assert a == b, "a and b differ here"
    if a or b:
        if b % 2:
            raise ValueError("odd b after either here")
        try:
            b.run()
        except OSError:
            if b:
                raise ValueError("handled with b here")
    raise ValueError("unguarded at the end")
"""


@pytest.mark.parametrize("template, condition", [
    ("a is missing here", "a is None"),
    ("b is too large here", "b > 3"),
    ("b is not ready here", "not ready(b)"),       # an elif: its own test, not the negation of the `if` before it
    ("b is fine at {int}", ""),                    # the else of an elif chain: every test above failed
    ("the lookup failed here", "except (KeyError, IndexError)"),
    ("a and b differ here", "a != b"),             # an assert fires when its expression is false
    ("odd b after either here", "(a or b) and b % 2"),   # an `or` joined to the test inside it keeps its meaning
    ("handled with b here", "b"),                  # a handler's test is not joined to `except T` by `and`
    ("unguarded at the end", ""),
])
def test_conditions_of_invented_snippets(template, condition):
    found = {t: c for _, _, t, _, c in sites(_GUARDED)}
    assert found[template] == condition


def test_a_condition_too_long_to_read_is_not_recorded():
    test = " and ".join(f"flag_{i} is not None" for i in range(12))   # 12 clauses, over MAX_CONDITION
    found = sites(f"if {test}:\n    raise ValueError('twelve clauses at once')\n")
    assert found[0][4] == ""


# Small invented snippets: one per construct the reader handles that the real fixture files lack.
@pytest.mark.parametrize("code, kind, template", [
    ("import sys\nsys.exit(f'bad value {x}, stop here')", "SystemExit", "bad value {any}, stop here"),
    ("def f():\n    msg = f'size {n:d} is wrong'\n    msg += ' for this model'\n    raise ValueError(msg)",
     "ValueError", "size {int} is wrong for this model"),
    ("raise RuntimeError('lost %(n)d workers of %(m)s' % d)", "RuntimeError", "lost {int} workers of {any}"),
    ("raise TypeError('got ' + type(x).__name__ + ' instead of a tensor')", "TypeError",
     "got {name} instead of a tensor"),
    ("raise ValueError(f'ratio {r:.2f} out of range, {len(xs)} items')", "ValueError",
     "ratio {float} out of range, {int} items"),
    ("raise ValueError(' '.join(['unknown option', repr(o)]))", "ValueError", "unknown option {any}"),
    ("logging.error('cannot open {} for {name}'.format(p, name=n))", "error", "cannot open {any} for {any}"),
    ("raise KeyError(f'a {{literal}} brace {x!r}')", "KeyError", "a {{literal}} brace {quoted}"),
])
def test_template_reader(code, kind, template):
    found = sites(code)
    assert (kind, template) in {(k, t) for _, k, t, _, _ in found}, found


def test_ranges():
    labels = ["0.14", "0.15", "0.16", "0.17", "0.18"]
    assert bri.ranges([1, 2, 4], labels) == "0.15-0.16,0.18"
    assert bri.ranges([0], labels) == "0.14"


def test_convert_rewrites_an_index_without_downloading(built, tmp_path):
    """--convert: a format-1 file (the gzip'd JSON list shipped before) or a format-2 file of the same sites gives
    the bytes a build gives, and converting a format-3 file gives it back unchanged."""
    import gzip
    import json
    data = built[0]
    store = rs_store.Store(data)
    meta = {k: v for k, v in store.meta.items() if k != "sites"} | {"format": 1}
    old = tmp_path / "old.json.gz"
    with gzip.open(old, "wt", encoding="utf-8") as f:
        json.dump({"meta": meta, "sites": [r[1:] for r in store.rows()]}, f)
    assert bri.convert(old)[0] == data
    new = tmp_path / "new.idx"
    new.write_bytes(data)
    assert bri.convert(new)[0] == data
    two = tmp_path / "two.idx"
    two.write_bytes(rs_store.encode(meta | {"format": 2}, [r[1:] for r in store.rows()], fmt=2))
    assert rs_store.Store.open(two).rows() == store.rows()
    assert bri.convert(two)[0] == data
    assert bri.main(["--convert", str(old), "--out", str(tmp_path / "out.idx")]) == 0
    assert (tmp_path / "out.idx").read_bytes() == data


def test_every_site_is_reached_through_its_rarest_word(built):
    """Each site is filed under its rarest word (in the bucket that word hashes to) and its next two."""
    data = built[0]
    store = rs_store.Store(data)
    for gid, *row in store.rows():
        words = rs_store.words_of(row[5])
        assert any(r[0] == gid for w in words for r in store.first(w)), row


def test_add_merges_a_new_package_into_an_index_as_the_full_build_does(built, tmp_path):
    """--add NAME reads only NAME's releases and merges its sites into the index: the same bytes as the full build
    of the list; an index that already holds NAME, or whose other packages are not as listed, is refused."""
    trl_only = tmp_path / "trl.toml"
    trl_only.write_text(LIST.split("[[package]]\nname = \"ms-swift\"")[0])
    first, _ = bri.build(trl_only, jobs=1, fetcher=DirFetcher(tmp_path))
    index = tmp_path / "index.idx"
    index.write_bytes(first)
    lst = tmp_path / "packages.toml"
    lst.write_text(LIST)
    read = []

    class Counting(DirFetcher):
        def path(self, name, version, kind):
            read.append(name)
            return super().path(name, version, kind)

    data, meta = bri.add(lst, index, ["ms-swift"], jobs=1, fetcher=Counting(tmp_path))
    assert data == built[0]
    assert set(read) == {"ms-swift"} and meta["releases"] == 2
    with pytest.raises(ValueError, match="already holds"):
        bri.add(lst, index, ["trl"], jobs=1, fetcher=DirFetcher(tmp_path))
    lst.write_text(LIST.replace('versions = ["0.18.2", "0.20.0"]', 'versions = ["0.18.2", "0.19.1", "0.20.0"]'))
    with pytest.raises(ValueError, match="full build"):
        bri.add(lst, index, ["ms-swift"], jobs=1, fetcher=DirFetcher(tmp_path))


def test_releases_under_an_earlier_name_are_filed_under_the_current_one(tmp_path):
    """``renamed``: a release published under an old name is downloaded under it and read from its old import
    package; its sites are the package's, with the old module paths (LLaMA-Factory's llmtuner before 0.7.1)."""

    class Renamed(DirFetcher):
        def path(self, name, version, kind):
            if name != "oldtrl":
                return super().path(name, version, kind)
            return self.archive(name, version, f"oldtrl-{version}-py3-none-any.whl",
                                [("old" + rel, data) for rel, data in _files("trl", version)])

    lst = tmp_path / "packages.toml"
    lst.write_text(LIST.split("[[package]]\nname = \"ms-swift\"")[0].replace(
        "versions =", 'renamed = { oldtrl = ["0.18.2"] }\nversions ='))
    data, meta = bri.build(lst, jobs=1, fetcher=Renamed(tmp_path))
    rows = [r[1:] for r in rs_store.Store(data).rows()]
    assert {r[0] for r in rows} == {"trl"} and meta["renamed"] == {"trl": {"oldtrl": ["0.18.2"]}}
    assert {r[1] for r in rows if r[2].startswith("oldtrl/")} == {"0.18"}
    assert {r[1] for r in rows if r[2].startswith("trl/")} == {"0.20"}
    same = "'generation_batch_size' and 'steps_per_generation' can not be both configured at the same time"
    assert sorted((r[1], r[2].split("/")[0]) for r in rows if r[5] == same) == [("0.18", "oldtrl"), ("0.20", "trl")]


@pytest.mark.parametrize("kind, filename, where", [
    # a platform wheel that keeps its modules under <name>-<version>.data/purelib/ (OpenRLHF's)
    ('kind = "platform-wheel"', "{name}-{version}-cp311-cp311-manylinux1_x86_64.whl",
     "{name}-{version}.data/purelib/{rel}"),
    # ``src_prefix = "src/"``: an sdist that keeps the package in src/ (axolotl's)
    ('kind = "sdist"\nsrc_prefix = "src/"', "{name}-{version}.tar.gz", "{name}-{version}/src/{rel}"),
], ids=["wheel-purelib", "sdist-src-layout"])
def test_a_release_packed_another_way_is_read_as_the_installed_paths(built, tmp_path, kind, filename, where):
    """The same files in another archive layout give the sites a plain wheel of them gives."""

    class Repacked(DirFetcher):
        def path(self, name, version, _kind):
            return self.archive(name, version, filename.format(name=name, version=version),
                                [(where.format(name=name, version=version, rel=rel), data)
                                 for rel, data in _files(name, version)])

    lst = tmp_path / "packages.toml"
    lst.write_text(LIST.replace('kind = "wheel"', kind))
    assert bri.build(lst, jobs=1, fetcher=Repacked(tmp_path))[0] == built[0]


def test_templates_a_package_list_drops_are_left_out(built, tmp_path):
    """``drop``: the listed templates of that package are not indexed (all their sites); another package's sites of
    the same wording and everything else are the same."""
    _data, _again, _meta, idx = built
    tpl = "Liger loss does not support two-sided GRPO loss yet."   # trl 0.18.2/0.20.0 grpo_config.py __post_init__
    assert _rows(idx, package="trl", template=tpl)
    lst = tmp_path / "packages.toml"
    lst.write_text(LIST.replace('versions = ["0.18.2", "0.20.0"]',
                                'versions = ["0.18.2", "0.20.0"]\ndrop = ["' + tpl.replace('"', '\\"') + '"]'))
    data, _ = bri.build(lst, jobs=1, fetcher=DirFetcher(tmp_path))
    out = tmp_path / "dropped.idx"
    out.write_bytes(data)
    fewer = rs.index(out)
    assert not _rows(fewer, package="trl", template=tpl)
    assert _rows(fewer, package="ms-swift", template=tpl)   # ms-swift's own copy of the wording (rlhf_args.py) stays
    assert sorted(s.row for s in fewer.sites) == sorted(s.row for s in idx.sites
                                                       if (s.row[0], s.row[5]) != ("trl", tpl))
