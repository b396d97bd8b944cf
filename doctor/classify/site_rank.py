"""Which of the raise sites that match a message raised it: the ranking behind a finding's ``raised_by``.

The same wording often exists in several places: trl copies GRPOConfig's checks into its experimental configs
(MiniLLMConfig, SDFTConfig, ...), ms-swift 3.1-3.3 copied trl's GRPOTrainer check, ms-swift 3.x and 4.x hold the
same check in two files, and a template with a free hole (``Expected {any}, got {any}``) matches whatever follows
its words. Best first:

1. the exception type: a site that raises that class, then a logging site, then a site raising another class;
2. the stack: a site in the file where the traceback says it was raised, then in a file the stack went through
   (a site of the package the raising frame is in, but in another file of it, is dropped: the stack says where);
3. the whole template found in the message before a template the message stops inside (a paste cut short:
   the rest of its words are not seen); then the longest literal text (the most specific template: ``Expected
   {any} inputs, got {int}`` before ``Expected {any}, got {any}``), then the score of the match
   (raise_sites.lookup: the whole message, or the template's words followed by more text);
4. a site whose releases hold the version the log printed for its package;
5. the package the run's framework points at (``prefer``: ms-swift, then the trl under it);
6. a module outside ``experimental``, tests and the Flax/TensorFlow backends (rarely what ran), then a GRPO module;
7. package, module and function names (a stable order).

Sites equal on 1-6 in different packages are a tie no evidence breaks (provenance.py shows each of them).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .. import lazyre

_MM = lazyre.compile(r"(\d+)\.(\d+)")


_LEVELS = frozenset({"error", "warning", "critical", "info", "debug"})
TIE = 8  # rank_key()[:TIE]: what evidence says; the rest only orders names
MATCH = 5  # rank_key()[:MATCH]: how well the wording matches (the same for the releases a narrowing unites)


class _Site(Protocol):
    @property
    def package(self) -> str: ...
    @property
    def versions(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def where(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def cut(self) -> bool: ...


def frame_rank(module: str, frames: Sequence[str]) -> int:
    """0: ``module`` is the file of the last frame (where it was raised); 1: of another frame; 2: of none."""
    tail = "/" + module
    for i, path in enumerate(reversed(frames)):
        p = "/" + path.replace("\\", "/").lstrip("/")
        if p.endswith(tail):
            return 0 if i == 0 else 1
    return 2


def contradicted(module: str, frames: Sequence[str]) -> bool:
    """The stack's raising frame says the site did not raise it: that frame is in the site's package (its top
    directory: ``swift/``, ``torch/``) but in another file (torch.amp's GradScaler, not the FSDP one the index holds),
    or it is in another installed package's code (a site-packages frame of transformers under a trl site: transformers
    raised it, with the same words)."""
    if not frames:
        return False
    last = "/" + frames[-1].replace("\\", "/").lstrip("/")
    top = "/" + module.split("/", 1)[0] + "/"
    if top in last:
        return not last.endswith("/" + module)
    installed = _INSTALLED.search(last)
    return installed is not None and "/" + installed.group(1) + "/" != top


# the indexed packages' top directories as installed (a frame under site-packages tells its package for certain; a
# source checkout's paths are left alone)
_INSTALLED = lazyre.compile(r"[/\\](?:site|dist)-packages[/\\](swift|trl|vllm|transformers|deepspeed|peft|accelerate|torch)[/\\]")


def _side(module: str) -> bool:
    """Experimental code or tests shipped inside the package, transformers' Flax and TensorFlow backends (a GRPO
    stack runs PyTorch: modeling_flax_utils.py repeats modeling_utils.py's wordings), or a package's monkeypatched
    copy of another library's code (axolotl's integrations/*/monkeypatch/ repeat transformers' model forwards): a copy
    ran only where the stack shows it."""
    m = "/" + module
    name = m.rsplit("/", 1)[-1]
    return ("/experimental/" in m or "/tests/" in m or "/test_utils/" in m or name.startswith("test_")
            or "flax" in name or name.startswith(("modeling_tf_", "tf_")) or "/monkeypatch/" in m)


def holds(versions: str, version: str) -> bool:
    """Does the range text ``versions`` ("0.15-0.16,0.18") hold ``version`` ("0.16.2")?"""
    m = _MM.match(version)
    if m is None:
        return False
    v = (int(m.group(1)), int(m.group(2)))
    for part in versions.split(","):
        a, _, b = part.partition("-")
        lo, hi = _MM.match(a), _MM.match(b or a)
        if lo and hi and (int(lo.group(1)), int(lo.group(2))) <= v <= (int(hi.group(1)), int(hi.group(2))):
            return True
    return False


def rank_key(m: _Site, lit: int, exc_type: str | None, level: str | None, frames: Sequence[str] = (),
             prefer: Sequence[str] = (), known: Mapping[str, str] | None = None) -> tuple:
    """The sort key of a site (see the module doc); ``lit``: the literal length of its template."""
    if exc_type:
        short = exc_type.rsplit(".", 1)[-1]
        typed = 0 if m.kind == short else 1 if m.kind in _LEVELS else 2
    else:
        typed = 0 if level and m.kind == level else 1
    ver = (known or {}).get(m.package)
    return (typed, frame_rank(m.module, frames), m.cut, -lit, -round(m.score, 3),
            0 if ver is None or holds(m.versions, ver) else 1,
            prefer.index(m.package) if m.package in prefer else len(prefer),
            (_side(m.module), "grpo" not in m.module), m.package, m.module, m.where)
