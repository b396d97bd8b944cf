"""The library boundary of an import or signature clash: WHICH two packages disagree and on which symbol, read from
the structure of the failure (issue 15 part A), so that a version-clash finding names them and gives the fix in
their names instead of "two packages do not match".

Two shapes, both formatted by CPython itself (so the parsing does not depend on any library's wording):
- an import: ``ImportError: cannot import name 'X' from 'Y' (path)`` and ``ModuleNotFoundError: No module named
  'a.b'`` (Python/ceval.c import_from, Python/import.c), or an ImportError whose message was cut but whose last
  frame's source line is the ``from Y import X`` that failed (a notebook view). The importer is the package of the
  innermost frame (the one running the import statement); the provider is Y's top-level package.
- a call: ``F() got an unexpected keyword argument 'k'``, ``F() takes N positional arguments but M were given``,
  ``F() missing N required positional argument(s)`` (Python/getargs.c, Objects/call.c, Python/ceval.c). The call
  fails before the callee runs, so the innermost frame is the CALLER; the callee's package is read from its
  qualified name (``GRPOTrainer.x`` -> trl, by the class owners of doctor/classify/hints.py) or from a package name
  inside it (``_unsloth_get_batch_samples`` -> unsloth). With no frame, a keyword that is a model-input field
  (``*_ids``, ``*_mask``, ``pixel_values``, ``*_grid_thw``) was produced by a transformers tokenizer/processor and
  forwarded as ``**inputs``: transformers is the other side.

Real cases behind the two shapes: an importer newer or older than its provider, unslothai/unsloth#1992 (unsloth
importing a name the installed unsloth_zoo lacks; upgrading unsloth_zoo fixed it) and unslothai/unsloth-zoo#16
(the same between unsloth_zoo and unsloth, "an old unsloth_zoo paired with a newer unsloth"); a caller passing a
keyword its callee was not written for, huggingface/transformers#36331 and sail-sg/closer-look-LLM-unlearning#1
(transformers 4.46+ Trainer.training_step passes ``num_items_in_batch`` to an older ``compute_loss`` override);
a processor field forwarded into a model or helper that does not take it, Anni-Zou/Decker#6 and
ludwig-ai/ludwig#3328 (``token_type_ids`` from the tokenizer into ``forward``).

Which side to move: the package that DEPENDS on the other (its requirements declare the other: unsloth and
unsloth_zoo declare transformers/trl/peft; trl declares transformers and accelerate; ms-swift declares trl,
transformers and peft; peft declares transformers; vLLM declares transformers and torch) is the one written for a
range of the other, so the fix is "upgrade the dependent one, or pin the other to the range it declares".
Pure: exception text and frames in, strings out.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import lazyre
from ..signals import ExceptionInfo, Frame
from .component import PACKAGES, PLUMBING, is_user, norm, package_of

_CANNOT = lazyre.compile(r"cannot import name '([\w.]+)' from (?:partially initialized module )?'([\w.]+)'")
_NO_MODULE = lazyre.compile(r"No module named '([\w.]+)'")
_FROM = lazyre.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?\s*([\w]+)")
_IMPORT = lazyre.compile(r"^\s*import\s+([\w.]+)")
_CALL = lazyre.compile(r"^([\w.<>]+)\(\) (?:got an unexpected keyword argument '(\w+)'|takes (?:from \d+ to )?\d+ "
                   r"positional arguments? but \d+ (?:were|was) given|missing \d+ required (?:positional|keyword-only) "
                   r"arguments?: (.+)|got multiple values for argument '(\w+)')")
_FIELD = lazyre.compile(r"(?:_ids|_mask|^pixel_values\w*|_grid_thw|_features|_embeds|^labels)$")
_NAMED = lazyre.compile(r"(?:^|_)(unsloth|vllm|swift|deepspeed|peft|liger|trl)(?:_|$)")

# display name (component.PACKAGES', but unsloth_zoo keeps its own name: the pair can be unsloth vs unsloth_zoo) and
# pip name of a top-level package directory
_DISPLAY = {**PACKAGES, "unsloth_zoo": "unsloth_zoo"}
_PIP = {"swift": "ms-swift", "unsloth": "unsloth unsloth_zoo", "unsloth_zoo": "unsloth unsloth_zoo",
        "flash_attn": "flash-attn", "megatron": "megatron-core"}
# package -> the packages its requirements declare (the dependent side of a pair is the one to move)
_DEPENDS = {
    "unsloth": {"transformers", "trl", "peft", "accelerate", "torch", "unsloth_zoo", "vllm", "datasets"},
    "unsloth_zoo": {"transformers", "trl", "peft", "accelerate", "torch", "datasets"},
    "trl": {"transformers", "accelerate", "datasets", "peft", "vllm"},
    "swift": {"trl", "transformers", "peft", "vllm", "deepspeed", "accelerate", "datasets", "torch"},
    "peft": {"transformers", "torch", "accelerate"},
    "vllm": {"transformers", "torch"},
    "transformers": {"torch", "accelerate"},
    "accelerate": {"torch"},
    "deepspeed": {"torch"},
    "verl": {"transformers", "vllm", "torch", "peft"},
    "openrlhf": {"transformers", "vllm", "deepspeed", "torch"},
    "verifiers": {"trl", "transformers", "vllm"},
}
# the version key of RunConfig.versions for a package directory
_VERSION_KEY = {"swift": "ms-swift", "vllm": "vllm", "trl": "trl", "transformers": "transformers",
                "unsloth": "unsloth", "unsloth_zoo": "unsloth"}


@dataclass(frozen=True)
class Boundary:
    kind: str               # "import" or "call"
    user: str | None        # package directory of the importer/caller (None: your code or unknown)
    provider: str | None    # package directory of the imported module / the callee
    symbol: str             # `Unpack` from `transformers.processing_utils`; `GRPOTrainer.f`
    keyword: str = ""       # the keyword the callee does not take
    user_code: str = ""     # "your code at x.py:12" when the importer/caller is the user's own file
    via: str = ""           # how the other side was read when no frame shows it
    cut: bool = False       # read from the import statement of the last frame: the message itself is not shown
    missing: bool = False   # "No module named 'x'" (undotted): CPython names the first missing component, so x
                            # itself is not installed (a dotted name means its parent package imported)


def _owner(name: str) -> str | None:
    from .hints import _OWNERS
    cls = name.split(".")[-2] if "." in name else ""
    for pkg, names in _OWNERS.items():
        if cls in names:
            return {"ms-swift": "swift", "vLLM": "vllm"}.get(pkg, pkg)
    m = _NAMED.search(name.split(".")[-1].lower())
    return m.group(1) if m else None


def _user_frame(frames: tuple[Frame, ...]) -> tuple[str | None, str]:
    """(package, user-code text) of the innermost frame that is not plumbing or generated code."""
    for fr in reversed(frames):
        pkg = package_of(fr.path)
        if pkg is None:
            if not is_user(fr):
                return None, ""   # the paste cut its path: whose code it is cannot be told
            return None, f"your code at {norm(fr.path).rsplit('/', 1)[-1]}:{fr.lineno}"
        if pkg.startswith("<") or pkg in PLUMBING or pkg == "stdlib":
            continue
        return pkg, ""
    return None, ""


def boundary(exc: ExceptionInfo, frames: tuple[Frame, ...]) -> Boundary | None:
    """The boundary of an ImportError / ModuleNotFoundError / signature TypeError, or None."""
    t = exc.short_type
    if t in ("ImportError", "ModuleNotFoundError"):
        m = _CANNOT.search(exc.message)
        name = mod = ""
        cut = missing = False
        if m:
            name, mod = m.group(1), m.group(2)
        elif (m := _NO_MODULE.search(exc.message)) is not None:
            mod = m.group(1)
            missing = "." not in mod
        else:
            code = next((f.code for f in reversed(frames) if f.code and ("import " in f.code)), "")
            cut = not exc.message
            if (m := _FROM.match(code)) is not None:
                mod, name = m.group(1), m.group(2)
            elif (m := _IMPORT.match(code)) is not None:
                mod = m.group(1)
        if not mod or mod.startswith("."):
            return None
        user, text = _user_frame(frames)
        top = mod.split(".", 1)[0]
        return Boundary("import", user, top, f"`{name}` from `{mod}`" if name else f"module `{mod}`",
                        user_code=text, cut=cut, missing=missing)
    if t != "TypeError":
        return None
    m = _CALL.match(exc.message.strip())
    if m is None:
        return None
    callee = m.group(1)
    provider = _owner(callee)
    kw = m.group(2) or m.group(4) or ""
    user, text = _user_frame(frames)
    via = ""
    if user is None and not text and kw and _FIELD.search(kw):
        user, via = "transformers", (f"`{kw}` is a model-input field (a tokenizer/processor output of transformers, "
                                     f"forwarded as keyword arguments)")
    if provider is None and user is None:
        return None
    return Boundary("call", user, provider, f"`{callee}`", kw, text, via)


def display(pkg: str | None) -> str:
    return _DISPLAY.get(pkg or "", pkg or "?")


def _ver(pkg: str, versions: dict[str, str]) -> str:
    v = versions.get(_VERSION_KEY.get(pkg, pkg), "")
    return f" {v}" if v else ""


# the standard library's modules that exist on POSIX systems only (CPython's Modules/ and Lib/ built or installed on
# Unix only: resource, fcntl, termios, pwd, grp...): missing, they say the run is on Windows
_POSIX_ONLY = frozenset({"resource", "fcntl", "termios", "tty", "pty", "pwd", "grp", "crypt", "posix", "syslog",
                         "spwd", "nis", "readline", "curses", "_curses", "posixshmem", "_posixshmem", "_posixsubprocess"})


# the extension modules a CPython build leaves out when their C library is missing at build time (configure's
# detection: liblzma, libbz2, libffi, libsqlite3, OpenSSL, Tk, libuuid, gdbm)
_BUILD_OPTIONAL = frozenset({"_lzma", "_bz2", "_ctypes", "_sqlite3", "_ssl", "_hashlib", "_tkinter", "_uuid", "_gdbm",
                             "_dbm"})


def stdlib_module(name: str) -> str | None:
    """"posix" or "build" when ``name`` is a module of Python's standard library (which pip cannot install): one that
    exists on POSIX systems only, or one a Python build may leave out; None for any other name (a module removed from
    a later Python, such as distutils, is not said to be either)."""
    if name in _POSIX_ONLY:
        return "posix"
    return "build" if name in _BUILD_OPTIONAL else None


def _stdlib_explain(b: Boundary) -> str:
    if stdlib_module(b.provider or "") == "posix":
        return (f"The import that failed is {b.symbol}: `{b.provider}` is a module of Python's standard library that "
                f"exists on POSIX systems only (Linux, macOS), so this run is on Windows, where the code that imports "
                f"it cannot run.")
    return (f"The import that failed is {b.symbol}: `{b.provider}` is a module of Python's standard library, so this "
            f"Python was built or installed without it (its C library was missing when Python was built).")


def explain(b: Boundary, versions: dict[str, str]) -> str:
    """One or two sentences: who imports/calls what from whom, with the versions the log printed."""
    user = b.user_code or (f"{display(b.user)}{_ver(b.user, versions)}" if b.user else "")
    prov = f"{display(b.provider)}{_ver(b.provider, versions)}" if b.provider else ""
    if b.kind == "import":
        if b.missing and stdlib_module(b.provider or ""):
            return _stdlib_explain(b)
        if b.missing:
            return (f"The import that failed is {b.symbol}" + (f" (by {user})" if user else "") + f": no package "
                    f"provides `{b.provider}` in this environment (not installed, or installed in "
                    f"another Python environment than the one that ran).")
        if b.cut and user and prov and b.user != b.provider:
            return (f"The boundary: {user} imports {b.symbol} and that import failed (its message is not shown: "
                    f"either the installed {prov} lacks the name, or importing {display(b.provider)} itself failed on "
                    f"a dependency it checks): {display(b.user)} and {display(b.provider)} are from releases that do "
                    f"not belong together, or an installed dependency of {display(b.provider)} is.")
        if b.user_code and b.provider:
            return (f"The boundary: {user} imports {b.symbol}, which the installed {prov} does not provide: the code "
                    f"was written for another {display(b.provider)} release (the name was added, moved or removed).")
        if user and prov and b.user != b.provider:
            return (f"The boundary: {user} imports {b.symbol}, which the installed {prov} does not provide: "
                    f"{display(b.user)} and {display(b.provider)} are from releases that do not belong together.")
        return f"The import that failed is {b.symbol}" + (f" ({prov})." if prov else ".")
    prov_txt = f" ({prov}'s)" if prov else ""
    what = f"{b.symbol}{prov_txt}" + (f", which does not take the keyword `{b.keyword}`" if b.keyword else
                                      ", whose signature takes other arguments than the call passes")
    if b.via:
        callee = f"this {display(b.provider)} release" if b.provider else f"{b.symbol} as installed"
        return (f"The boundary: {what}; {b.via}: the installed {display(b.user)}{_ver(b.user or '', versions)} "
                f"produces an input {callee} does not know (one of the two is from another release).")
    if user:
        return (f"The boundary: {user} calls {what}: the caller was written for another release of "
                f"{display(b.provider) if b.provider else 'the callee'}.")
    return f"The boundary: {what}: the call was written for another release."


def fix(b: Boundary, versions: dict[str, str], notebook: bool = False) -> str:
    """The fix in the two packages' names: move the dependent package, or pin the other to its declared range."""
    a, c = b.user, b.provider
    if b.missing and c and stdlib_module(c) == "posix":
        return ("Run the training on Linux (or in WSL2 on Windows): the trainer imports a module Windows' Python does "
                "not have.")
    if b.missing and c and stdlib_module(c):
        return (f"Use a Python built with `{c}` (python.org's or conda's builds have it; for a Python built from "
                f"source, install the C library's development package and build it again).")
    if b.missing and c:
        pip = _PIP.get(c, c.replace("_", "-"))
        dep = f" at the version {display(a)}{_ver(a, versions)} declares (`pip show {_PIP.get(a, a).split()[0]}`)" \
            if a and a != c else ""
        return (f"Install it in the environment that runs the training: pip install {pip}{dep} (the import name "
                f"and the pip name can differ; the package's docs give the pip name).")
    if b.kind == "call" and c is None and a:
        param = f"`{b.keyword}=None` (or `**kwargs`)" if b.keyword else "the parameters the call passes"
        return (f"{b.symbol} belongs to no package named in the log: if it is your own override (a subclass method of "
                f"a {display(a)} class), give it {param}, as the installed {display(a)}{_ver(a, versions)} calls it; "
                f"or pin {_PIP.get(a, a)} to the release your code was written for.")
    if b.user_code or not a or not c or a == c or {a, c} == {"unsloth", "unsloth_zoo"}:
        pkg = c if c and not ({a, c} == {"unsloth", "unsloth_zoo"}) else (a or c)
        if pkg is None:
            return ""
        pip = _PIP.get(pkg, pkg)
        if b.user_code:
            return (f"Install the {display(pkg)} release your code was written for (its requirements), or update "
                    f"{b.user_code.removeprefix('your code at ')} to the installed {display(pkg)}{_ver(pkg, versions)}.")
        return (f"Reinstall {pip} as one matching set (pip install --upgrade {pip}; `pip check` lists what still "
                f"conflicts)" + (", then restart the runtime so the new versions are imported." if notebook else "."))
    dep, base = (a, c) if c in _DEPENDS.get(a, ()) else ((c, a) if a in _DEPENDS.get(c, ()) else (a, c))
    pip = _PIP.get(dep, dep)
    together = " (the two together)" if " " in pip else ""
    return (f"Make {display(dep)} and {display(base)} a pair that belongs together: upgrade {pip}{together} to a "
            f"release written for the installed {display(base)}{_ver(base, versions)} (pip install --upgrade {pip}), "
            f"or pin {_PIP.get(base, base)} to the range {display(dep)}{_ver(dep, versions)} declares (`pip show "
            f"{_PIP.get(dep, dep) if ' ' not in _PIP.get(dep, dep) else dep}` lists it; `pip check` names the conflict)"
            + (", then restart the runtime." if notebook else "."))
