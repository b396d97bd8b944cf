"""GD450: Python cannot import a module: the pip package that provides it and why the run needs it, a compiled
extension built for another torch, or an ms-swift 3.x/4.x module path."""
from __future__ import annotations

import re

from ...classify.boundary import stdlib_module
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._frames import importer, is_lib, short_path
from ._versions import swift_module_move

# python module -> (pip spec, why it is needed)
PIP: dict[str, tuple[str, str]] = {
    "msgspec": ("msgspec", "ms-swift 4.6.0's GRPO trainer imports it (swift/rlhf_trainers/utils.py) but does not "
                           "declare it as a dependency"),
    "flash_attn": ("flash-attn --no-build-isolation", "--attn_impl flash_attn, padding_free and packing need it; "
                                                      "--attn_impl sdpa avoids it"),
    "flash_attn_2_cuda": ("flash-attn --no-build-isolation --force-reinstall",
                          "the compiled flash-attn extension is missing or built for another torch"),
    "deepspeed": ("'deepspeed>=0.14'", "--deepspeed needs it (the README recommends 0.18.9); or drop --deepspeed"),
    "vllm": ("vllm", "--use_vllm true needs it (README: vllm >=0.5.1, recommended 0.11.0 or 0.23.0; a vllm wheel "
                     "pins its own torch); or --use_vllm false"),
    "trl": ("'trl>=0.15,<1.0'", "ms-swift's RLHF trainers are built on it (README recommends 0.29.1)"),
    "peft": ("'peft>=0.11,<0.21'", "LoRA training needs it"),
    "math_verify": ("math-verify", "the accuracy reward (MathAccuracy) uses it"),
    "latex2sympy2_extended": ("latex2sympy2_extended", "math-verify needs it"),
    "liger_kernel": ("'liger-kernel>=0.7.0'", "--use_liger_kernel needs it"),
    "qwen_vl_utils": ("qwen-vl-utils", "Qwen-VL image/video preprocessing needs it"),
    "qwen_omni_utils": ("qwen-omni-utils", "Qwen-Omni preprocessing needs it"),
    "decord": ("decord", "video decoding needs it"),
    "av": ("av", "video/audio decoding needs it"),
    "swanlab": ("swanlab", "--report_to swanlab needs it"),
    "wandb": ("wandb", "--report_to wandb needs it"),
    "tensorboard": ("tensorboard", "--report_to tensorboard (the default) needs it"),
    "modelscope": ("modelscope", "ms-swift downloads models and datasets with it"),
    "transformers": ("transformers", "ms-swift is built on it (README: >=4.33)"),
    "accelerate": ("accelerate", "the Trainer needs it"),
    "datasets": ("datasets", "dataset loading needs it"),
    "cv2": ("opencv-python-headless", "image/video processing needs it"),
    "PIL": ("pillow", "image loading needs it"),
    "yaml": ("pyyaml", "config files need it"),
    "sklearn": ("scikit-learn", ""),
    "soundfile": ("soundfile", "audio loading needs it"),
    "librosa": ("librosa", "audio processing needs it"),
    "einops": ("einops", "the model code imports it"),
    "timm": ("timm", "the vision tower code imports it"),
    "bitsandbytes": ("bitsandbytes", "4/8-bit quantisation (--quant_method bnb) needs it"),
    "evalscope": ("evalscope", "evaluation with evalscope needs it"),
    "openai": ("openai", "an API-based reward model or judge needs it"),
    "rouge_score": ("rouge-score", ""),
    "jieba": ("jieba", ""),
    "nltk": ("nltk", ""),
    "swift": ("ms-swift", "the code imports ms-swift"),
}


# top-level names that are namespace packages shared by several distributions: `google.protobuf` missing means
# protobuf is not installed, not that `google` lacks a module
_NAMESPACES = frozenset({"google", "nvidia", "azure", "mpl_toolkits", "jaxlib", "backports"})
# libraries whose submodules move between releases, beside the ones of PIP
_LIBRARIES = frozenset({"torch", "unsloth", "unsloth_zoo", "llamafactory", "verl", "openrlhf", "vllm_ascend",
                        "torch_npu", "xformers", "triton", "megatron", "lmdeploy", "sglang"})


def _dist_name(spec: str) -> str:
    """The distribution's name of a pip spec: ``'trl>=0.15,<1.0'`` -> ``trl``."""
    return re.split(r"[<>=!~\s\[]", spec.strip("'"), maxsplit=1)[0]


def _missing_submodule(mod: str, where: str, framework: str | None) -> Diagnosis | None:
    """``No module named 'pkg.sub'``: Python imports a dotted name's parents first and names the first part it cannot
    find (importlib._bootstrap._find_and_load_unlocked), so `pkg` imported and the installed `pkg` has no `sub`: the
    importing code was written for another release of it (the module moved or went away)."""
    top, _, _rest = mod.partition(".")
    if not _rest or top in _NAMESPACES or (top not in PIP and top not in _LIBRARIES) or top == "swift":
        return None
    pkg = _dist_name(PIP[top][0]) if top in PIP else top
    msg = (f"Python imported `{top}` but the installed `{top}` has no module `{mod}`{where}: Python names the first "
           f"part of a dotted import it cannot find, so the package is there and this part of it is not. The "
           f"importing code was written for another release of {pkg}, where `{mod}` exists (it moved or was removed "
           f"since, or is newer than the installed release).")
    fix = [f"pip show {pkg} (the installed release), then install the release the importing code was written for "
           f"(its requirements file or README pins it), or change the import to where the installed release keeps "
           f"that name (its changelog says where it moved)."]
    if framework == "ms-swift" and top in PIP and "ms-swift" in PIP[top][1]:
        fix.append(f"For ms-swift itself: pip install {PIP[top][0]} ({PIP[top][1]}).")
    return Diagnosis(message=msg, fix=tuple(fix))


def _project_submodule(mod: str, where: str) -> Diagnosis:
    """``No module named 'pkg.sub.leaf'`` for a package no release table knows (a project's own package: open_r1, a
    research repo's src): Python imported ``pkg.sub`` (it names the first part it cannot find), so a ``pkg`` is
    there and lacks ``leaf``: most often another copy of the project (a pip install, another clone, an older branch)
    than the one whose code imports it."""
    parent, _, leaf = mod.rpartition(".")
    top = mod.split(".")[0]
    msg = (f"Python imported `{parent}` but found no `{leaf}` in it{where}: Python names the first part of a dotted "
           f"import it cannot find, so it finds a `{top}` package (installed or on the path), and that is not the "
           f"copy the importing code was written with (another clone, an older pip install, a branch without that "
           f"file).")
    fix = (f"`python -c 'import {top}; print({top}.__file__)'` shows which `{top}` is imported: if it is not the "
           f"checkout being run, install that checkout (`pip install -e .` in it) or put it first on PYTHONPATH; if it "
           f"is, its `{parent.replace('.', '/')}/` has no `{leaf}.py` (pull the branch or release that adds it).",)
    return Diagnosis(message=msg, fix=fix)


def _own_checkout(mod: str, frame) -> Diagnosis | None:
    """A package's own source file imports the package and Python finds none: the file runs from a source checkout
    (a script run by path puts only its own folder on sys.path) in an interpreter where the package is not installed."""
    top = mod.split(".")[0]
    path = (frame.path if frame is not None else "").replace(chr(92), "/")
    if not path or f"/{top}/" not in path or is_lib(path):
        return None
    checkout = path.split(f"/{top}/", 1)[0]
    repo = checkout[:-len("/src")] if checkout.endswith("/src") else checkout  # a src/ layout installs from above
    return Diagnosis(
        message=f"`{top}` is imported by its own source file ({short_path(path)}:{frame.lineno}) and Python finds no "
                f"`{top}`: the source checkout is on disk ({checkout}), but the interpreter that ran this file has no "
                f"`{top}` installed. A file run by path (a launcher or torchrun given the script) puts only its own "
                f"folder on sys.path, not the folder above the package.",
        fix=(f"Install the checkout into the environment that runs it (`pip install -e .` in {repo}), and launch with that environment's own launcher (`which python torchrun` in the "
             f"activated environment: another environment's torchrun runs another Python).",))


def module_not_found_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    mod = (hits[0].groups.get("mod") or "").strip()
    top = mod.split(".")[0]
    frame = importer(hits[0].exc)
    where = f" (imported at {short_path(frame.path)}:{frame.lineno})" if frame else ""
    if top == "swift" and mod != "swift":
        moved = swift_module_move(mod, run)
        if moved:
            return moved
    if mod in ("vllm._C", "vllm._C_ops") or mod.startswith("flash_attn_2_cuda"):
        pkg = "vllm" if top == "vllm" else "flash-attn"
        return Diagnosis(
            message=f"`{mod}` is the compiled part of {pkg}; it is missing or was built for another "
                    f"torch/CUDA{where}.",
            fix=(f"Reinstall {pkg} for the installed torch: pip install --force-reinstall "
                 f"{'vllm' if pkg == 'vllm' else 'flash-attn --no-build-isolation'} (a vllm wheel pins its "
                 f"torch: let it install that torch, ideally in a fresh environment).",
                 "Or avoid it: --attn_impl sdpa (flash-attn) / --use_vllm false (vLLM)."))
    kind = stdlib_module(top)
    if kind is not None:  # Python's own module: no package provides it
        from ...classify.boundary import Boundary, explain, fix
        b = Boundary("import", None, top, f"module `{mod}`", missing=True)
        at = f" It was imported at {short_path(frame.path)}:{frame.lineno}." if frame else ""
        return Diagnosis(message=explain(b, {}) + at, fix=(fix(b, {}),),
                         title="A module of Python's standard library is missing")
    framework = ctx.framework()[0]
    # a dotted name: Python imported its parents before it named this part (no checkout missing from the path)
    own = _own_checkout(mod, frame) if "." not in mod else None
    if own is not None:
        return own
    sub = _missing_submodule(mod, where, framework)
    if sub is not None:
        return sub
    if "." in mod and top not in PIP and top not in _NAMESPACES:
        return _project_submodule(mod, where)
    spec, why = PIP.get(top, (None, ""))
    if framework != "ms-swift" and spec:
        # the pins and the reasons of the table are ms-swift's requirements: another stack pins its own
        spec = spec if top in ("flash_attn", "flash_attn_2_cuda") else _dist_name(spec)
        why = "" if "ms-swift" in why or "swift" in why.split() else why
    msg = f"Python cannot import `{mod}`{where}"
    msg += f": {why}." if why else "."
    if spec:
        fix = [f"pip install {spec}"]
        if top in ("vllm", "deepspeed", "flash_attn"):
            fix.append("Install it into the same environment that runs swift (`which python`, `pip show ms-swift`)."
                       if framework == "ms-swift" else
                       "Install it into the same environment that runs the trainer (`which python` of the launch).")
    else:
        own = ("pass its file with --external_plugins or put its folder on PYTHONPATH" if framework == "ms-swift"
               else "put its folder on PYTHONPATH (or install it with `pip install -e .` in its project)")
        fix = [f"pip install {top.replace('_', '-')} (if that is the package name; check its project page).",
               f"If `{top}` is your own module (a reward function, a plugin, the project's package), {own}."]
    return Diagnosis(message=msg, fix=tuple(fix))
