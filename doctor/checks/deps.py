"""Missing or mismatched packages (rules GD450-GD459).

Package names, ranges and recommended versions come from swift-notes §1.7 and the ms-swift README
dependency table quoted there (HEAD: trl >=0.15,<1.0 recommended 0.29.1; vllm >=0.5.1, recommended
0.11.0 / 0.23.0; deepspeed >=0.14, recommended 0.18.9; transformers >=4.33, recommended 4.57.6 / 5.12.1;
peft >=0.11,<0.21; README v3.8: trl <0.21, recommended 0.20.0).
"""
from __future__ import annotations

import re
from typing import Any

from ..model import EXCEPTION, Evidence, ExceptionInfo, Finding, Frame
from ..rules import FinishContext, Hit, Rule
from ._swift import at_least, version_label

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
# ms-swift 4.0 moved its modules (swift-notes §7)
V3_MODULES = ("swift.llm", "swift.plugin", "swift.trainers.rlhf_trainer", "swift.trainers.rlhf_arguments",
              "swift.tuners.")
V4_MODULES = ("swift.rewards", "swift.arguments", "swift.pipelines", "swift.rlhf_trainers", "swift.model",
              "swift.template", "swift.dataset", "swift.infer_engine", "swift.rl_core")
_MOVES = ("swift.llm.argument -> swift.arguments, swift.llm.train -> swift.pipelines.train, "
          "swift.trainers.rlhf_trainer -> swift.rlhf_trainers, swift.plugin (ORM, orms) -> swift.rewards")
README_RANGES = {
    "trl": "trl >=0.15,<1.0 (recommended 0.29.1; ms-swift 3.8 README: <0.21, recommended 0.20.0)",
    "transformers": "transformers >=4.33 (recommended 4.57.6 or 5.12.1)",
    "peft": "peft >=0.11,<0.21",
    "deepspeed": "deepspeed >=0.14 (recommended 0.18.9)",
    "vllm": "vllm >=0.5.1 (recommended 0.11.0 or 0.23.0)",
}


def _importer(exc: ExceptionInfo | None) -> Frame | None:
    if exc is None or not exc.frames:
        return None
    return exc.frames[-1]


def _is_lib(path: str) -> bool:
    return any(m in path for m in ("site-packages", "dist-packages", "/lib/python3", "\\Lib\\"))


def _short(path: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def swift_module_move(mod: str, run) -> dict[str, Any] | None:
    if mod.startswith(V3_MODULES) or mod in ("swift.llm", "swift.plugin"):
        return {"message": f"`{mod}` is an ms-swift 3.x module; ms-swift 4.0 reorganised the package ({_MOVES}), so "
                           f"code written for 3.x (a reward plugin, a custom script) fails to import on "
                           f"{version_label(run) if run.major == 4 else 'ms-swift 4.x'}.",
                "fix": [f"Update the imports ({_MOVES}).",
                        "Or install the ms-swift the code was written for: pip install 'ms-swift<4'."]}
    if mod.startswith(V4_MODULES):
        return {"message": f"`{mod}` exists only in ms-swift 4.x; the installed ms-swift is older.",
                "fix": ["pip install -U 'ms-swift>=4' (and its matching trl), or use the 3.x import paths "
                        "(swift.llm, swift.plugin)."]}
    return None


def module_not_found_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    mod = (hits[0].groups.get("mod") or "").strip()
    top = mod.split(".")[0]
    frame = _importer(hits[0].exc)
    where = f" (imported at {_short(frame.path)}:{frame.lineno})" if frame else ""
    if top == "swift" and mod != "swift":
        moved = swift_module_move(mod, run)
        if moved:
            return moved
    if mod in ("vllm._C", "vllm._C_ops") or mod.startswith("flash_attn_2_cuda"):
        pkg = "vllm" if top == "vllm" else "flash-attn"
        return {"message": f"`{mod}` is the compiled part of {pkg}; it is missing or was built for another "
                           f"torch/CUDA{where}.",
                "fix": [f"Reinstall {pkg} for the installed torch: pip install --force-reinstall "
                        f"{'vllm' if pkg == 'vllm' else 'flash-attn --no-build-isolation'} (a vllm wheel pins its "
                        f"torch: let it install that torch, ideally in a fresh environment).",
                        "Or avoid it: --attn_impl sdpa (flash-attn) / --use_vllm false (vLLM)."]}
    spec, why = PIP.get(top, (None, ""))
    msg = f"Python cannot import `{mod}`{where}"
    msg += f": {why}." if why else "."
    if spec:
        fix = [f"pip install {spec}"]
        if top in ("vllm", "deepspeed", "flash_attn"):
            fix.append("Install it into the same environment that runs swift (`which python`, `pip show ms-swift`).")
    else:
        fix = [f"pip install {top.replace('_', '-')} (if that is the package name; check its project page).",
               f"If `{top}` is your own module (a reward or multi-turn plugin), pass its file with --external_plugins "
               f"or put its folder on PYTHONPATH."]
    return {"message": msg, "fix": fix}


def vllm_missing_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    return {"message": "--use_vllm true, but vLLM cannot be imported in this environment (not installed, or its "
                       "import failed).",
            "fix": ["pip install vllm (README: vllm >=0.5.1, recommended 0.11.0 or 0.23.0). A vllm wheel pins the torch "
                    "it was built with, so install it first or in a fresh environment and let it choose torch.",
                    "Check that it imports: python -c 'import vllm' (an ImportError there names the real cause).",
                    "Or generate with transformers instead (much slower): --use_vllm false."]}


def _trl_range(run) -> str:
    if at_least(run, 4, 2):
        return "'trl>=0.26,<1.0' (README recommends 0.29.1)"
    if at_least(run, 4, 0):
        return "'trl>=0.20,<0.29'"
    mm = run.swift_major_minor
    if mm is not None and mm >= (3, 12):
        return "'trl>=0.20' (ms-swift 3.12.5+ requires it)"
    if mm is not None and mm >= (3, 4):
        return "'trl>=0.17,<0.21' (ms-swift 3.8 README recommends 0.20.0)"
    return "the trl range of your ms-swift release's README (HEAD: >=0.15,<1.0, recommended 0.29.1)"


def require_version_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    if g.get("trl_old"):
        return {"message": f"{version_label(run)} requires a newer trl than the one installed (the minimum is 0.17 "
                           f"in ms-swift 3.4-3.12.4 and 0.20 from 3.12.5).",
                "fix": [f"pip install -U {_trl_range(run)}",
                        "Check the pair afterwards: pip show ms-swift trl transformers."]}
    if g.get("trl018"):
        return {"message": "--generation_batch_size / --steps_per_generation need trl >= 0.18.",
                "fix": ["pip install 'trl>=0.18' (within your ms-swift's supported range), or drop those flags and "
                        "use --gradient_accumulation_steps."]}
    if g.get("liger"):
        return {"message": "--use_liger_kernel with GRPO needs liger-kernel >= 0.7.0.",
                "fix": ["pip install -U 'liger-kernel>=0.7.0', or drop --use_liger_kernel."]}
    req = (g.get("req") or "").strip()
    found = (g.get("found") or "").strip()
    pkg = re.split(r"[<>=!~ ]", req, maxsplit=1)[0] or found.split("==")[0]
    msg = f"{found or pkg + ' (another version)'} is installed, but {req} is required."
    if pkg == "trl" and run.major:
        msg += f" ({version_label(run)} checks this while parsing arguments.)"
    spec = req
    if pkg == "trl" and "<" not in req:
        m = re.search(r">=\s*([\d.]+)", req)
        low = tuple(int(x) for x in m.group(1).split(".")[:2]) if m else (0, 0)
        spec = f"{req},<1.0" if low >= (0, 26) else f"{req},<0.29"
    fix = [f"pip install '{spec}'" + (" (the ms-swift 4.x README recommends trl 0.29.1)" if spec.endswith("<1.0") else "")]
    if pkg in README_RANGES:
        fix.append(f"The ms-swift README range: {README_RANGES[pkg]}. A newer trl may need a newer transformers: "
                   f"install them together (pip install '{spec}' transformers -U) and re-check with pip show.")
    return {"message": msg, "fix": fix}


def package_not_found_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    pkg = (g.get("pkg") or g.get("pkg2") or "").strip().strip("'\"")
    if pkg.lower() == "deepspeed":
        ds = run.get("deepspeed")
        return {"message": f"--deepspeed{' ' + str(ds) if ds else ''} needs DeepSpeed, which is not installed "
                           f"(importlib finds no package metadata for it).",
                "fix": ["pip install 'deepspeed>=0.14' (the README recommends 0.18.9).",
                        "Or train without it: drop --deepspeed."]}
    return {"message": f"The package `{pkg}` is not installed (importlib finds no metadata for it).",
            "fix": [f"pip install {pkg}"]}


_PKG_IN_PATH = (("flash_attn", "flash-attn"), ("vllm", "vllm"), ("deepspeed", "deepspeed"),
                ("bitsandbytes", "bitsandbytes"), ("xformers", "xformers"), ("transformer_engine", "transformer-engine"),
                ("apex", "apex"), ("liger", "liger-kernel"), ("torchvision", "torchvision"), ("torchaudio", "torchaudio"),
                ("torch", "torch"))


def binary_ext_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    text = hits[0].evidence.text
    pkg = next((p for m, p in _PKG_IN_PATH if m in text), None)
    if g.get("fa_err"):
        return {"message": f"--attn_impl flash_attn was requested but flash-attn cannot be used: {g['fa_err']}",
                "fix": ["pip install flash-attn --no-build-isolation (a wheel matching your torch, CUDA and Python)",
                        "Or --attn_impl sdpa (no extra package; a little slower)."]}
    if g.get("lib"):
        lib = g["lib"]
        return {"message": f"A compiled extension{(' of ' + pkg) if pkg else ''} needs {lib}, which this machine "
                           f"does not have: it was built for another CUDA version.",
                "fix": [f"Install the build of {pkg or 'the package'} that matches your CUDA and torch "
                        f"(python -c 'import torch; print(torch.__version__, torch.version.cuda)').",
                        "Or install the CUDA runtime it expects."]}
    sym = g.get("sym") or "?"
    who = pkg or "a compiled extension"
    fix = [f"Reinstall {who} against the installed torch: pip install --force-reinstall --no-build-isolation {who}"
           if pkg and pkg != "torch" else "Reinstall the package whose .so appears in the error against the "
                                           "installed torch."]
    if pkg == "flash-attn":
        fix.append("Or avoid flash-attn: --attn_impl sdpa.")
    if pkg == "vllm":
        fix = ["A vllm wheel is built for one torch version: let `pip install vllm==<version>` install its torch "
               "(ideally in a fresh environment) instead of upgrading torch afterwards."]
    return {"message": f"{who} was compiled against a different torch/CUDA than the one installed (undefined symbol "
                       f"{sym[:80]}).", "fix": fix}


def cannot_import_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    run = ctx.run
    g = hits[0].groups
    name, mod = g.get("name") or "?", g.get("mod") or "?"
    top = mod.split(".")[0]
    frame = _importer(hits[0].exc)
    by = f" (imported by {_short(frame.path)}:{frame.lineno})" if frame else ""
    if top == "swift":
        moved = swift_module_move(mod, run)
        if moved:
            moved["message"] = f"`{name}` cannot be imported from `{mod}`{by}. " + moved["message"]
            return moved
        return {"message": f"`{name}` is not in `{mod}` in {version_label(run)}{by}: the code was written for another "
                           f"ms-swift release.",
                "fix": ["Install the ms-swift release the code targets, or update the import to this release."]}
    msg = (f"The installed {top} has no `{name}` in `{mod}`{by}: the importing code was written for another {top} "
           f"release.")
    fix = [f"pip show {top} ms-swift, then install the {top} version the importing package pins"
           + (f" (ms-swift README: {README_RANGES[top]})." if top in README_RANGES else ".")]
    if frame and "swift" in frame.path:
        fix.append(f"ms-swift itself imports it here: pip install 'ms-swift==<your version>' reinstalls a matching "
                   f"{top}.")
    return {"message": msg, "fix": fix}


def unexpected_kwarg_fix(hits: list[Hit], ctx: FinishContext) -> dict[str, Any]:
    g = hits[0].groups
    callee, kw = g.get("callee") or "?", g.get("kw") or "?"
    frame = _importer(hits[0].exc)
    by = f" (called from {_short(frame.path)}:{frame.lineno})" if frame else ""
    return {"message": f"{callee} does not accept `{kw}`{by}: the caller was written for another version of the "
                       f"library that defines {callee}.",
            "fix": ["pip show ms-swift trl transformers vllm peft, and install the versions that belong together "
                    "(the ms-swift README dependency table for your release).",
                    f"If the call is in your own code, drop `{kw}` or install the library version it was written for."]}


class TrlSubclassApi(Rule):
    """A custom GRPO trainer written for the trl 0.14 interface (raw rows in compute_loss) running on a newer trl
    that hands compute_loss a dict of tensors: ``TypeError: string indices must be integers`` (dev-log 009)."""

    kinds = frozenset({EXCEPTION})

    def __init__(self, meta):
        super().__init__(meta)
        self.exc: ExceptionInfo | None = None

    def feed(self, kind: str, payload: Any) -> None:
        exc: ExceptionInfo = payload
        if self.exc is not None or exc.short_type != "TypeError":
            return
        if not ("string indices must be integers" in exc.message or
                "list indices must be integers or slices, not str" in exc.message):
            return
        if any("reward" in (fr.path + fr.func).lower() or "orm" == fr.func.lower() or "plugin" in fr.path.lower()
               for fr in exc.frames):
            return  # a reward function indexing its inputs: a reward function error, not this
        user = [fr for fr in exc.frames if not _is_lib(fr.path)]
        prompt_code = any('"prompt"' in fr.code or "'prompt'" in fr.code for fr in user)
        user_hook = any(fr.func in ("compute_loss", "_prepare_inputs", "_generate_and_score_completions")
                        and "grpo" in fr.path.lower() for fr in user)
        if (prompt_code and any("grpo" in fr.path.lower() or fr.func == "compute_loss" for fr in user)) or user_hook:
            self.exc = exc

    def finish(self, ctx: FinishContext) -> list[Finding]:
        if self.exc is None:
            return []
        exc = self.exc
        user = [fr for fr in exc.frames if not _is_lib(fr.path)]
        named = [fr for fr in user if not fr.func.startswith("<")]
        at = named[-1] if named else (user[-1] if user else exc.frames[-1])
        trl = ctx.run.versions.get("trl")
        msg = (f"{_short(at.path)}:{at.lineno} in {at.func} indexes the trainer inputs as raw dataset rows "
               f"(x[\"prompt\"]), but the installed trl{(' ' + trl) if trl else ''} passes compute_loss a dict of "
               f"tensors (prompt_ids, completion_ids, advantages, ...): the custom GRPO trainer was written for the "
               f"trl 0.14 interface, and trl 0.15 moved generation into _prepare_inputs.")
        fix = ["Install the trl the project pins (its requirements file; for trainers written against trl 0.14: "
               "pip install trl==0.14.0).",
               "Or port the subclass to the installed trl: override _generate_and_score_completions/_prepare_inputs "
               "instead of reading prompts in compute_loss."]
        return [self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                          seq=exc.seq, ranks=(exc.rank,) if exc.rank is not None else ())]
