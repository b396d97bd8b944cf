"""Which component raised an exception: the package a stack frame belongs to, the deepest library frame, the
user's own frames, and the stack an exception printed without frames belongs to.

Pure functions over parsed frames (doctor/signals.py Frame); no I/O. The package names are those of the GRPO
stack as they appear in a path (`site-packages/<pkg>/`, or a source checkout such as `ms-swift/swift/...`).
"""
from __future__ import annotations

from .. import lazyre
from ..signals import ExceptionInfo, Frame
from ..sources.traceback import CUT, NO_FUNC
from ..swift.framework import is_library_path

# package directory -> component name shown to the user
PACKAGES = {
    "swift": "ms-swift", "trl": "trl", "vllm": "vLLM", "deepspeed": "DeepSpeed", "transformers": "transformers",
    "peft": "peft", "accelerate": "accelerate", "unsloth": "unsloth", "unsloth_zoo": "unsloth", "torch": "torch",
    "datasets": "datasets", "megatron": "Megatron", "hydra": "hydra", "flash_attn": "flash-attn",
    "verifiers": "verifiers", "ray": "ray", "starlette": "starlette", "uvicorn": "uvicorn", "fastapi": "fastapi",
    "verl": "verl", "openrlhf": "OpenRLHF", "llamafactory": "LLaMA-Factory", "llmtuner": "LLaMA-Factory",
    "rllm": "rLLM", "nemo_rl": "NeMo-RL", "axolotl": "axolotl",
}
# frameworks people run from a clone of their repository, under src/ (LLaMA-Factory: src/llamafactory, formerly
# src/llmtuner; axolotl: src/axolotl) or a folder of the package's own name (rLLM: rllm/rllm/trainer/...)
_SRC_CHECKOUTS = {"llamafactory": ("src",), "llmtuner": ("src",), "rllm": ("rllm",), "axolotl": ("src",)}
# frameworks run from their repository (and its forks: EasyR1 and TinyZero keep the package verl/): the package
# directory followed by one of its own subpackages
_CHECKOUT_SUBS = {"verl": {"trainer", "workers", "utils", "single_controller", "models", "third_party", "protocol.py",
                           "experimental"},
                  "openrlhf": {"cli", "trainer", "models", "utils", "datasets"},
                  # NVIDIA NeMo-RL (nemo_rl/algorithms, distributed, models, evals...), run from its clone
                  "nemo_rl": {"algorithms", "distributed", "models", "evals", "data", "environments", "utils"},
                  # axolotl's and LLaMA-Factory's package folders (src/axolotl/..., src/llamafactory/...) as a docker
                  # image or a shortened paste shows them, without the src/ above
                  "axolotl": {"prompt_strategies", "prompt_tokenizers.py", "core", "cli", "monkeypatch", "utils",
                              "integrations", "loaders", "common", "train.py", "datasets.py"},
                  "llamafactory": {"data", "train", "model", "hparams", "extras", "chat", "launcher.py", "cli.py"}}
# wrappers and the standard library: never the component that failed
PLUMBING = {"concurrent", "asyncio", "threading", "multiprocessing", "hydra", "starlette", "uvicorn", "fastapi",
            "runpy", "functools", "contextlib", "importlib", "<frozen", "<string>"}
_SITE = ("site-packages/", "dist-packages/")


def norm(path: str) -> str:
    return path.replace("\\", "/")


# packages whose folder name alone names them in a path printed relative to site-packages (`vllm/v1/executor/...`,
# as Ray and vLLM's workers print their own frames) or after an elision the user typed (`/.../vllm/model_executor/...`)
_NAMED_BY_FOLDER = frozenset({"vllm", "verl", "trl", "deepspeed", "transformers", "peft", "accelerate", "megatron",
                              "openrlhf", "llamafactory", "unsloth", "unsloth_zoo", "sglang", "torch", "swift"})
_ELISIONS = ("...", "\u2026")


# pip's build tree: a package being installed from source is unpacked into <tmp>/pip-install-<id>/<name>_<32 hex>/
# (pip/_internal/req/req_install.py ensure_build_location): its setup.py and modules are that package's, not the user's
_PIP_BUILD = lazyre.compile(r"/pip-install-[\w-]+/(?P<name>[A-Za-z0-9_.-]+?)_[0-9a-f]{32}/")


def package_of(path: str) -> str | None:
    """The top-level package directory of a frame's file, or None for the user's own code."""
    p = norm(path)
    if "unsloth_compiled_cache/" in p:
        return "unsloth"  # the trainer copies unsloth writes at import (Unsloth<Name>Trainer.py): its code, not the user's
    built = _PIP_BUILD.search(p) if "/pip-install-" in p else None
    if built is not None:
        return built.group("name").lower().replace("-", "_")
    head = p.split("/", 3)
    if head[0] in _ELISIONS or (head[0] == "" and len(head) > 2 and head[1] in _ELISIONS):
        after = head[1] if head[0] in _ELISIONS else head[2]
        if after in _NAMED_BY_FOLDER and len(head) > 2:
            return after
    elif head[0] in _NAMED_BY_FOLDER and len(head) > 1:
        return head[0]
    if p.endswith((".pyx", ".pxd", ".pxi")) and not p.startswith("/") and len(head) > 1:
        return head[0]  # a compiled module's Cython source as its frames name it ("uvloop/loop.pyx"): an installed one's
    for marker in _SITE:
        if marker in p:
            return p.split(marker, 1)[1].split("/", 1)[0]
    if p.startswith("<"):
        return p  # <string>, <frozen ...>: generated code
    if "/lib/python3" in p:  # the standard library: /usr/lib/python3.11/concurrent/futures/_base.py
        rest = p.split("/lib/python3", 1)[1].split("/", 2)
        return rest[1] if len(rest) > 2 else "stdlib"
    parts = p.split("/")
    # a source checkout of a library (`pip install -e`): .../ms-swift/swift/trainers/..., .../vllm/vllm/...
    for i, part in enumerate(parts[:-1]):
        if part in _CHECKOUT_SUBS and parts[i + 1] in _CHECKOUT_SUBS[part]:
            return part
        if part in _SRC_CHECKOUTS and i > 0 and parts[i - 1] in _SRC_CHECKOUTS[part]:
            return part
        if part in ("swift", "trl", "vllm", "deepspeed", "transformers", "peft", "megatron") and i > 0:
            parent = parts[i - 1]
            # the checkout's folder: the package's own name, a release or branch of it (ms-swift-main, vllm-0.8.5)
            if parent in (part, "ms-swift", "Megatron-LM", "src") or parent.startswith((part, "ms-swift")):
                return part
    return None


def possessive(name: str) -> str:
    """A component's or package's name as the owner of what follows: "transformers'", "vLLM's"."""
    return name + ("'" if name.endswith("s") else "'s")


def component(path: str) -> str:
    pkg = package_of(path)
    if pkg is None:
        if path.startswith(CUT):
            return f"{path[len(CUT):]} (path cut)"
        return "the script's code"
    return PACKAGES.get(pkg, pkg)


def is_user(fr: Frame) -> bool:
    """A frame in the user's own code; a frame whose path the paste cut (CUT) is nobody's known code."""
    return package_of(fr.path) is None and not fr.path.startswith(CUT)


def from_site(path: str) -> str:
    """The path from its last site-packages/ (dist-packages/) folder on, or the whole path: the folders above are an
    environment's, whose name may be a library's (`envs/vllm/lib/python3.12/site-packages/transformers/...`)."""
    p = norm(path)
    cut = max(p.rfind(marker) for marker in _SITE)
    return p[cut:] if cut >= 0 else p


def rel(fr: Frame) -> str:
    """`vllm/multimodal/processing.py:2004 in _apply_prompt_updates`: the path below site-packages."""
    p = norm(fr.path)
    for marker in _SITE:
        if marker in p:
            p = p.split(marker, 1)[1]
            break
    # a frame line pasted without its function (sources/traceback.py NO_FUNC) names its place only; a notebook frame
    # whose line IPython did not print (lineno -1) names its file only
    at = f"{p}:{fr.lineno}" if fr.lineno >= 0 else p
    return at if fr.func == NO_FUNC else f"{at} in {fr.func}"


# torch.nn.Module's call path (torch/nn/modules/module.py): every module call passes through it on its way to the
# module's forward, so it says nothing of where the failure is (a stack cut there stopped before the forward it calls)
_MODULE_CALL = frozenset({"_call_impl", "_wrapped_call_impl", "__call__"})


def deepest_library(frames: tuple[Frame, ...]) -> Frame | None:
    """The innermost frame inside a library that is not plumbing (futures, asyncio, hydra..., torch's module call)."""
    for fr in reversed(frames):
        pkg = package_of(fr.path)
        if pkg is not None and pkg not in PLUMBING and not pkg.startswith("<") and pkg != "stdlib":
            if pkg == "torch" and fr.func in _MODULE_CALL and fr.path.endswith("nn/modules/module.py"):
                continue
            return fr
    return None


def stack_packages(frames: tuple[Frame, ...]) -> set[str]:
    """The libraries a stack runs through (not the user's code, the standard library or wrappers)."""
    pkgs = {package_of(f.path) for f in frames}
    return {p for p in pkgs if p and p not in PLUMBING and p != "stdlib" and not p.startswith("<")}


def _checkout_root(path: str) -> tuple[str, str] | None:
    """(the folder of the repository clone a frame of a framework's source checkout lies in, the first folder inside
    it): (".../LLaMA-Factory", "src") for .../LLaMA-Factory/src/llmtuner/data/loader.py; None for installed packages
    and the user's own files."""
    p = norm(path)
    pkg = package_of(p)
    if pkg is None or any(m in p for m in _SITE) or "/lib/python3" in p or pkg.startswith("<"):
        return None
    parts = p.split("/")
    for i in range(len(parts) - 2, 0, -1):  # the innermost folder of that name: rllm/rllm/trainer is the package's
        if parts[i] == pkg:
            at = i - 1 if parts[i - 1] == "src" else i
            return ("/".join(parts[:at]), parts[at]) if at > 0 and parts[:at] != [""] else None
    return None


def user_frames(frames: tuple[Frame, ...]) -> list[Frame]:
    """The frames of the user's own code: not an installed package, not the standard library, and not a file of a
    framework's source checkout that the same stack runs through (its entry script, e.g. src/train_bash.py, also
    printed relative to the checkout when it was started from there)."""
    roots = {r for r in map(_checkout_root, (f.path for f in frames)) if r}

    def inside(path: str) -> bool:
        p = norm(path)
        return any(p.startswith(root + "/") or p.startswith(first + "/") for root, first in roots)

    return [f for f in frames if is_user(f) and not is_library_path(f.path) and not inside(f.path)]


def stack_for(exc: ExceptionInfo | None, open_tbs: list) -> tuple[Frame, ...]:
    """The frames of an exception; for one printed without frames (rank0's message above rank1's identical
    stack, an excerpt whose first frame lost its `[rankN]:` prefix), the stack of the nearest traceback in the
    same file that never got its own exception line."""
    if exc is not None and exc.frames:
        return exc.frames
    cands = [(line, frames) for line, frames in open_tbs
             if exc is None or line.where.path == exc.where.path]
    if not cands:
        return ()
    if exc is None:
        return cands[0][1]
    line, frames = min(cands, key=lambda c: abs(c[0].seq - exc.seq))
    return frames
