"""Download the releases listed in raise_index_packages.toml into a cache outside the repository.

pip is the client: its PackageFinder lists a project's files on the configured index and its session
downloads them (certificates, proxies and index settings as pip is set up). ``pip download`` itself is
not used for sdists because it builds their metadata: for vLLM that means installing torch and CUDA
build requirements. Wheels are taken only when pure Python (``py3-none-any``); ``kind = "sdist"``
packages take the source archive; ``kind = "platform-wheel"`` takes a wheel of any tag, for a package of Python
files published only as platform wheels (OpenRLHF's ``cp311-manylinux1`` wheels hold its modules under
``<name>-<version>.data/purelib/``, which the builder reads as the package's own paths).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

CACHE = Path(os.environ.get("GRPO_DOCTOR_RAISE_CACHE", Path.home() / ".cache" / "grpo-doctor-raise-index"))


def _pure_wheel(filename: str) -> bool:
    return filename.endswith(".whl") and filename[:-4].endswith("-none-any")


class Fetcher:
    def __init__(self, cache: Path = CACHE):
        self.cache = cache
        self._cmd = self._finder = self._session = None
        self._ctx = None
        self._cands: dict[str, list] = {}

    def _open(self):
        if self._finder is not None:
            return
        from pip._internal.commands import create_command
        self._cmd = create_command("download")
        opts, _ = self._cmd.parse_args(["--no-deps", "--quiet"])
        self._ctx = self._cmd.main_context()
        self._ctx.__enter__()
        self._session = self._cmd.get_default_session(opts)
        self._finder = self._cmd._build_package_finder(options=opts, session=self._session)

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None

    def path(self, name: str, version: str, kind: str) -> Path:
        """The cached archive of one release, downloaded on first use. Raises LookupError when the index has
        no file of that kind for the release."""
        d = self.cache / name / version
        done = [p for p in d.glob("*") if p.is_file() and not p.name.endswith(".part")
                and not p.name.startswith("sites-")] if d.is_dir() else []
        if done:
            return done[0]
        self._open()
        if name not in self._cands:
            import logging
            logging.getLogger("pip._internal.index.collector").setLevel(logging.ERROR)
            self._cands[name] = self._finder.find_all_candidates(name)
        files = [c.link for c in self._cands[name] if str(c.version) == version]
        if kind == "wheel":
            files = [f for f in files if _pure_wheel(f.filename)] or [f for f in files if f.filename.endswith(".tar.gz")]
        elif kind == "platform-wheel":
            files = [f for f in files if _pure_wheel(f.filename)] or [f for f in files if f.filename.endswith(".whl")]
        else:
            files = [f for f in files if f.filename.endswith((".tar.gz", ".zip"))]
        if not files:
            raise LookupError(f"{name} {version}: no {kind} on the index")
        link = min(files, key=lambda f: f.filename)
        d.mkdir(parents=True, exist_ok=True)
        target = d / link.filename
        part = target.with_name(target.name + ".part")
        print(f"  download {link.filename}", file=sys.stderr)
        with self._session.get(link.url.split("#")[0], stream=True, timeout=180) as r:
            r.raise_for_status()
            with open(part, "wb") as f:
                shutil.copyfileobj(r.raw, f, 1 << 20)
        part.rename(target)
        return target
