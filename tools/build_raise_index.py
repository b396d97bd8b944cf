"""Build doctor/data/raise_sites.idx: every message site of the GRPO stack, in every listed release.

    python tools/build_raise_index.py [--packages tools/raise_index_packages.toml] [--out FILE] [--jobs 2]
    python tools/build_raise_index.py --add NAME [--add NAME ...] [--out FILE]
    python tools/build_raise_index.py --convert OLD_FILE [--out FILE]

Reads the releases listed in raise_index_packages.toml (downloaded once into ~/.cache/grpo-doctor-raise-index,
or $GRPO_DOCTOR_RAISE_CACHE; see raise_index_fetch.py), walks their .py files with ast (raise_index_ast.py),
merges identical templates across releases into version ranges, drops templates with fewer than
MIN_WORDS literal words (too generic to point anywhere: ``raise ValueError(msg)``, ``f"Unknown {x}"``), and
writes one file in the bucketed format of doctor/classify/raise_store.py (format 3: a lookup decodes only the
buckets of its message's words, and parses only the rows it reads). The same list and the same archives give a byte-identical file: sites are
sorted, nothing in the file depends on time or place, and the build date written is the list's ``updated`` key.

``--add NAME`` reads only the releases of the listed package NAME, which the index (``--out``) does not hold yet,
and merges its sites into that index: the other packages' sites are taken from the file as they are, so nothing
but NAME's releases is downloaded. Every other package of the list must be in the index with the releases the
list names (a changed list needs the full build). The file written is the one a full build from the same
archives gives (the sites are one sorted list either way, and the dropped-template counts add up).

``drop = ["template", ...]`` leaves those templates of one package out (every site of it): a wording the package
copies from another whose own site is indexed (verl's copy of vLLM's "Model architectures {} are not supported for
now"), or one so short that it would be named for other packages' messages ("Cannot find {any}").

A package published under an earlier name (LLaMA-Factory as ``llmtuner`` before 0.7.1) lists those releases in
``renamed = { OLD = ["0.6.3", ...] }``: they are downloaded as OLD and read from its import package OLD, and their
sites are filed under the package's current name (their module paths keep the old package: ``llmtuner/...``).

``--convert`` rewrites an existing index (format 1, the gzip'd JSON list of earlier releases, or format 2 or 3) in
the current format without downloading anything: the same sites and meta, re-encoded; converting the format-1
file gives the same bytes as a build from the packages that made it.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import sys
import tarfile
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # doctor.classify.raise_store (the file format) and doctor.sources.message_words
from raise_index_ast import sites as file_sites

from doctor.classify import raise_store
from doctor.sources import message_words

DEFAULT_LIST = HERE / "raise_index_packages.toml"
DEFAULT_OUT = ROOT / "doctor" / "data" / "raise_sites.idx"
FORMAT = raise_store.FORMAT
MIN_WORDS = 2
_WORD = re.compile(r"[A-Za-z]{3,}")
# Re-implementations of CPython's own messages (a library's __getattr__ raising "'X' object has no attribute",
# an import helper raising "No module named"): the interpreter prints the same text for any code, so a match
# would name a library that most likely did not raise it.
BUILTIN_LIKE = re.compile(
    r"object has no attribute|^No module named|^cannot import name|missing \{\w+\} required (?:positional|keyword)"
    r"|got an unexpected keyword argument|takes \{\w+\} positional arguments? but|object is not (?:subscriptable|"
    r"callable|iterable)|^string indices must be integers|^list index out of range|unsupported operand type")
_HOLE = re.compile(r"\{(?:int|float|name|quoted|any)\}")


def literal_words(template: str) -> int:
    return len(_WORD.findall(_HOLE.sub(" ", template)))


# a wheel's files installed into site-packages from its .data folder (OpenRLHF's platform wheels keep its modules there)
_WHEEL_DATA = re.compile(r"^[^/]+\.data/(?:purelib|platlib)/")


def _unsrc(rel: str, spec: dict) -> str:
    """An sdist's path without the spec's ``src_prefix`` (the src layout: src/axolotl/... is axolotl/... installed)."""
    src = spec.get("src_prefix")
    return rel[len(src):] if src and rel.startswith(src) else rel


def _wanted(rel: str, spec: dict) -> bool:
    if not rel.endswith(".py"):
        return False
    include = spec.get("include") or [spec["import"] + "/"]
    if not any(rel.startswith(p) for p in include):
        return False
    if any(rel.startswith(p) for p in spec.get("exclude", ())):
        return any(rel.startswith(p) for p in spec.get("include_also", ()))
    return True


def iter_sources(archive: Path | None, spec: dict):
    """(path inside the package, source bytes) of the files the spec wants, from a wheel, an sdist or (for
    ``kind = "installed"``) the installed package's directory."""
    if archive is None:
        origin = importlib.util.find_spec(spec["import"]).origin
        base = Path(origin).parent.parent
        roots = spec.get("include") or [spec["import"] + "/"]
        for r in roots:
            for p in sorted((base / r).rglob("*.py")):
                rel = p.relative_to(base).as_posix()
                if _wanted(rel, spec):
                    yield rel, p.read_bytes()
        return
    if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            for name in sorted(z.namelist()):
                rel = _unsrc(name.split("/", 1)[1], spec) if archive.name.endswith(".zip") else _WHEEL_DATA.sub("", name)
                if _wanted(rel, spec):
                    yield rel, z.read(name)
        return
    with tarfile.open(archive, "r:gz") as t:
        for m in t:
            rel = _unsrc(m.name.split("/", 1)[1] if "/" in m.name else m.name, spec)
            if m.isfile() and _wanted(rel, spec):
                yield rel, t.extractfile(m).read()


_memo: dict[str, list] = {}  # content hash -> sites: most files do not change between two releases


def _cache_file(spec: dict, version: str, archive: str | None) -> Path | None:
    """Where one release's sites are kept between runs: keyed by the archive and by the extractor's code, so a
    new release or a changed include list parses only what changed."""
    if archive is None:
        return None
    code = (HERE / "raise_index_ast.py").read_bytes() + json.dumps(
        [spec.get(k) for k in ("import", "include", "exclude", "include_also")]
        + ([spec["src_prefix"]] if spec.get("src_prefix") else [])).encode()
    key = hashlib.sha1(code + Path(archive).name.encode() + str(Path(archive).stat().st_size).encode()).hexdigest()
    return Path(archive).parent / f"sites-{key[:16]}.json.gz"


def release_sites(job: tuple[dict, str, str | None]) -> tuple[str, str, set, int]:
    spec, version, archive = job
    cached = _cache_file(spec, version, archive)
    if cached is not None and cached.is_file():
        try:
            with gzip.open(cached, "rt", encoding="utf-8") as f:
                doc = json.load(f)
            return spec["name"], version, {(a, b, c, d, tuple(e), f) for a, b, c, d, e, f in doc["sites"]}, doc["files"]
        except (OSError, EOFError, ValueError):
            pass  # a broken cache file: read the release again
    out = set()
    n = 0
    for rel, data in iter_sources(Path(archive) if archive else None, spec):
        n += 1
        key = hashlib.sha1(data).hexdigest()
        found = _memo.get(key)
        if found is None:
            found = _memo[key] = file_sites(data)
        for where, kind, tpl, holes, cond in found:
            out.add((rel, where, kind, tpl, tuple(holes), cond))
    if cached is not None:
        part = cached.with_name(cached.name + ".part")
        with gzip.open(part, "wt", encoding="utf-8") as f:
            json.dump({"files": n, "sites": sorted(out)}, f)
        part.rename(cached)
    return spec["name"], version, out, n


def minor(version: str) -> str:
    parts = re.findall(r"\d+", version)
    return ".".join(parts[:2]) if len(parts) >= 2 else version


def ranges(indices: list[int], labels: list[str]) -> str:
    """'0.15-0.16,0.18' from the sorted indices of the releases that hold a site."""
    out, start, prev = [], None, None
    for i in indices + [None]:
        if start is not None and (i is None or i != prev + 1):
            out.append(labels[start] if start == prev else f"{labels[start]}-{labels[prev]}")
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return ",".join(out)


def release_spec(spec: dict, version: str) -> tuple[dict, str]:
    """(the spec to read ``version`` with, the name it is published under): a release listed under ``renamed``
    is downloaded under its old name and read from the old import package."""
    for old, vs in (spec.get("renamed") or {}).items():
        if version in vs:
            return dict(spec, **{"import": old}), old
    return spec, spec["name"]


def _collect(specs: list[dict], jobs: int, fetcher) -> tuple[list[list], dict, dict, int, int, int, int]:
    """(rows, versions, skipped, dropped generic, dropped builtin-like, files read, releases) of ``specs``."""
    if fetcher is None:
        from raise_index_fetch import Fetcher
        fetcher = Fetcher()
    work, versions, skipped = [], {}, {}
    for spec in specs:
        got = []
        for v in spec["versions"]:
            if spec.get("kind") == "installed":
                v = importlib.metadata.version(spec["name"]).split("+")[0]
                work.append((spec, v, None))
                got.append(v)
                continue
            vspec, dist = release_spec(spec, v)
            try:
                work.append((vspec, v, str(fetcher.path(dist, v, spec.get("kind", "wheel")))))
                got.append(v)
            except LookupError as e:
                skipped.setdefault(spec["name"], []).append(f"{v}: {e}")
        versions[spec["name"]] = got
    if hasattr(fetcher, "close"):
        fetcher.close()
    held: dict[tuple, set[int]] = {}
    latest: dict[tuple, tuple[tuple, str]] = {}   # (holes, condition) of the newest release that holds the site
    files = 0
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        for name, v, found, n in pool.map(release_sites, work, chunksize=1):
            files += n
            idx = versions[name].index(v)
            for rel, where, kind, tpl, holes, cond in sorted(found):
                key = (name, rel, where, kind, tpl)
                held.setdefault(key, set()).add(idx)
                if idx >= max(held[key]):
                    latest[key] = (holes, cond)
    rows, dropped, builtin_like = [], 0, 0
    listed_drops = {spec["name"]: frozenset(spec.get("drop", ())) for spec in specs}
    for key, idxs in held.items():
        name, rel, where, kind, tpl = key
        if tpl in listed_drops[name]:
            continue  # a wording the list says this package borrows from another (its comment says whose)
        if literal_words(tpl) < MIN_WORDS:
            dropped += 1
            continue
        if BUILTIN_LIKE.search(tpl):
            builtin_like += 1
            continue
        labels = [minor(v) for v in versions[name]]
        holes, cond = latest[key]
        rows.append([name, ranges(sorted(idxs), labels), rel, where, kind, tpl, list(holes)] + ([cond] if cond else []))
    return rows, versions, skipped, dropped, builtin_like, files, len(work)


def _encode(cfg: dict, rows: list[list], versions: dict, skipped: dict, dropped: int,
            builtin_like: int) -> tuple[bytes, dict]:
    rows = sorted(rows)
    per_package: dict[str, int] = {}
    for r in rows:
        per_package[r[0]] = per_package.get(r[0], 0) + 1
    meta = {"format": FORMAT, "updated": cfg.get("updated", ""), "tool": "tools/build_raise_index.py",
            "min_literal_words": MIN_WORDS, "versions": versions, "skipped": skipped,
            "excluded": {s["name"]: s.get("exclude", []) for s in cfg["package"] if s.get("exclude")},
            "sites_per_package": per_package, "dropped_generic": dropped,
            "dropped_builtin_like": builtin_like}
    renamed = {s["name"]: s["renamed"] for s in cfg["package"] if s.get("renamed")}
    if renamed:
        meta["renamed"] = renamed
    return raise_store.encode(meta, rows), meta


def build(list_path: Path, jobs: int = 2, fetcher=None) -> tuple[bytes, dict]:
    cfg = tomllib.loads(list_path.read_text(encoding="utf-8"))
    rows, versions, skipped, dropped, builtin_like, files, releases = _collect(cfg["package"], jobs, fetcher)
    data, meta = _encode(cfg, rows, versions, skipped, dropped, builtin_like)
    return data, dict(meta, files_read=files, releases=releases)


def add(list_path: Path, index_path: Path, names: list[str], jobs: int = 2, fetcher=None) -> tuple[bytes, dict]:
    """The index ``index_path`` with the sites of the listed packages ``names`` added (only their releases are
    read); the same bytes a full build of the list gives from the same archives. Raises ValueError when the index
    already holds one of ``names`` or does not hold the other packages of the list as listed."""
    cfg = tomllib.loads(list_path.read_text(encoding="utf-8"))
    store = raise_store.Store.open(index_path)
    old = store.meta
    listed = {s["name"]: s for s in cfg["package"]}
    for n in names:
        if n not in listed:
            raise ValueError(f"{n} is not in {list_path}")
        if n in old["versions"]:
            raise ValueError(f"{index_path} already holds {n}: a changed package needs the full build")
    for n, spec in listed.items():
        if n in names:
            continue
        have, want = old["versions"].get(n), spec["versions"]
        gone = {why.split(":")[0] for why in old["skipped"].get(n, [])}   # "0.15.0: no sdist on the index"
        if have is None or (spec.get("kind") != "installed" and have != [v for v in want if v not in gone]):
            raise ValueError(f"{index_path} does not hold {n} {want} as listed (it has {have}): use the full build")
    extra = set(old["versions"]) - set(listed)
    if extra:
        raise ValueError(f"{index_path} holds packages the list does not: {sorted(extra)}; use the full build")
    rows, versions, skipped, dropped, builtin_like, files, releases = _collect(
        [listed[n] for n in listed if n in names], jobs, fetcher)
    rows += [r[1:] for r in store.rows()]
    data, meta = _encode(cfg, rows, {**old["versions"], **versions}, {**old["skipped"], **skipped},
                         old["dropped_generic"] + dropped, old["dropped_builtin_like"] + builtin_like)
    return data, dict(meta, files_read=files, releases=releases)


def convert(path: Path) -> tuple[bytes, dict]:
    """An existing index file (format 1, 2 or 3) re-encoded in the current format: no download, no parse."""
    head = path.read_bytes()[:len(raise_store.MAGIC)]
    if head in raise_store.MAGICS:
        store = raise_store.Store.open(path)
        meta, rows = dict(store.meta), [r[1:] for r in store.rows()]
        meta.pop("sites", None)
    else:
        meta, rows = raise_store.read_format1(path)
    meta = dict(meta, format=FORMAT)
    return raise_store.encode(meta, rows), meta


def _write_words(index_path: Path) -> None:
    """The message words beside the index (doctor/sources/message_words.py reads them to mend wrapped messages)."""
    rows = raise_store.Store.open(index_path).rows()
    index_path.with_name(message_words.WORDS_FILE.name).write_bytes(message_words.words_of_index(r[6] for r in rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packages", type=Path, default=DEFAULT_LIST)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--convert", type=Path, help="re-encode this index file (format 1, 2 or 3); no download")
    ap.add_argument("--add", action="append", metavar="NAME",
                    help="read only this listed package and merge its sites into the index at --out")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.convert is not None:
        data, meta = convert(a.convert)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_bytes(data)
        _write_words(a.out)
        print(f"{a.out}: {len(data)} bytes, {sum(meta['sites_per_package'].values())} sites, converted from "
              f"{a.convert}")
        return 0
    if a.add:
        try:
            data, meta = add(a.packages, a.out, a.add, a.jobs)
        except ValueError as e:
            print(f"build_raise_index: {e}", file=sys.stderr)
            return 2
    else:
        data, meta = build(a.packages, a.jobs)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_bytes(data)
    _write_words(a.out)
    dt = time.perf_counter() - t0
    added = f" ({', '.join(a.add)} added)" if a.add else ""
    print(f"{a.out}: {len(data)} bytes, {sum(meta['sites_per_package'].values())} sites{added} from "
          f"{meta['releases']} releases ({meta['files_read']} files) in {dt:.0f} s; {meta['dropped_generic']} generic and "
          f"{meta['dropped_builtin_like']} CPython-like templates dropped")
    for name, n in sorted(meta["sites_per_package"].items()):
        print(f"  {name:14} {n:6} sites  {len(meta['versions'][name])} releases")
    for name, why in meta["skipped"].items():
        print(f"  skipped {name}: {'; '.join(why)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
