"""GD454: a compiled extension built against another torch/CUDA (undefined symbol, missing CUDA library)."""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...model import Severity
from ...release_fill import fill_release
from ...rules import Diagnosis, Hit

_PKG_IN_PATH = (("flash_attn", "flash-attn"), ("vllm", "vllm"), ("deepspeed", "deepspeed"),
                ("bitsandbytes", "bitsandbytes"), ("xformers", "xformers"), ("transformer_engine", "transformer-engine"),
                ("apex", "apex"), ("liger", "liger-kernel"), ("torchvision", "torchvision"), ("torchaudio", "torchaudio"),
                ("torch", "torch"))


def binary_ext_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    text = hits[0].evidence.text
    pkg = next((p for m, p in _PKG_IN_PATH if m in text), None)
    if g.get("fa_err"):
        return Diagnosis(
            message=f"--attn_impl flash_attn was requested but flash-attn cannot be used: {g['fa_err']}",
            fix=("pip install flash-attn --no-build-isolation (a wheel matching your torch, CUDA and Python)",
                 "Or --attn_impl sdpa (no extra package; a little slower)."))
    if g.get("vllm_c") is not None:
        # vllm/_custom_ops.py logs the ImportError of its compiled ops as a warning and goes on: every op it serves
        # then fails later; the exception's text says why, when the paste kept it
        why = g["vllm_c"].strip().rstrip(")").strip("'\"")   # the repr's quotes and its closing parenthesis
        shown = f" ({why[:160]})" if why else ""
        return Diagnosis(
            message=f"vLLM's compiled operations (vllm._C) failed to import{shown}: vLLM logs it as a warning and goes "
                    f"on, and the first kernel it needs then fails or the engine never starts. An ImportError here "
                    f"(not 'No module named', which a non-CUDA platform plugin expects) means the installed vllm "
                    f"wheel does not load with this torch, CUDA driver or CUDA libraries.",
            fix=(fill_release("Check the pair: `pip show vllm torch` against the torch version that vllm release "
                              "requires; let `pip install vllm==<version>` install its own torch (a fresh environment "
                              "is safest) instead of upgrading torch afterwards.", "vllm", ctx.run.versions.get("vllm")),
                 "Then `python -c 'import vllm._C'` shows the full error: `undefined symbol` means another torch, "
                 "`libcuda.so` / `libcudart.so` missing means the driver or CUDA runtime is not visible."))
    if g.get("xformers"):
        return _xformers_pair(hits, ctx)
    if g.get("lib"):
        lib = g["lib"]
        if pkg == "bitsandbytes" and "libbitsandbytes_cpu" in lib:
            return _bnb_no_native(ctx)
        return Diagnosis(
            message=f"A compiled extension{(' of ' + pkg) if pkg else ''} needs {lib}, which this machine "
                    f"does not have: it was built for another CUDA version.",
            fix=(f"Install the build of {pkg or 'the package'} that matches your CUDA and torch "
                 f"(python -c 'import torch; print(torch.__version__, torch.version.cuda)').",
                 "Or install the CUDA runtime it expects."))
    sym = g.get("sym") or "?"
    jit = _JIT_CACHE.search(text)
    if jit is not None:
        return _jit_cache_fix(jit, sym, ctx)
    who = pkg or "a compiled extension"
    fix = [f"Reinstall {who} against the installed torch: pip install --force-reinstall --no-build-isolation {who}"
           if pkg and pkg != "torch" else "Reinstall the package whose .so appears in the error against the "
                                           "installed torch."]
    if pkg == "flash-attn":
        fix.append("Or avoid flash-attn: --attn_impl sdpa.")
    if pkg == "vllm":
        fix = [fill_release("A vllm wheel is built for one torch version: let `pip install vllm==<version>` install its "
                            "torch (ideally in a fresh environment) instead of upgrading torch afterwards.", "vllm",
                            ctx.run.versions.get("vllm"))]
    return Diagnosis(
        message=f"{who} was compiled against a different torch/CUDA than the one installed (undefined symbol "
                f"{sym[:80]}).",
        fix=tuple(fix))


# an op built just in time into torch's extension cache (torch/utils/cpp_extension.py _get_build_directory:
# $TORCH_EXTENSIONS_DIR or ~/.cache/torch_extensions/<py>_<cu>/<name>; DeepSpeed's op_builder builder.py jit_load
# builds fused_adam, cpu_adam... there on first use)
_JIT_CACHE = lazyre.compile(r"(?P<dir>\S*torch_extensions/(?P<tag>[\w.]+)/(?P<op>\w+))/\w+\.so")
_NO_COMPILER = lazyre.compile(r"\['which', 'c\+\+'\]' returned non-zero|\bc\+\+: (?:command )?not found|"
                              r"\bninja: (?:command )?not found|nvcc: (?:command )?not found")


def _jit_cache_fix(jit: re.Match[str], sym: str, ctx: RunState) -> Diagnosis:
    op, tag = jit.group("op"), jit.group("tag")
    no_cc = next((ln for tail in ctx.tails.values() for ln in tail if _NO_COMPILER.search(ln.text)), None)
    msg = (f"{op}.so is an op built just in time into torch's extension cache ({jit.group('dir')}), built earlier "
           f"for another torch or CUDA: the cached build is loaded instead of a new one (undefined symbol "
           f"{sym[:80]}).")
    if no_cc is not None:
        msg += (f" The log also shows no compiler (line {no_cc.where.line}: `{no_cc.text.strip()[:100]}`), so the op "
                f"could not be rebuilt for the installed torch.")
    fix = (f"Delete the cached build (`rm -rf {jit.group('dir')}`, or point TORCH_EXTENSIONS_DIR at a fresh folder) "
           f"so it is rebuilt for the installed torch ({tag})" + (": install a C++ compiler first (`apt install "
                                                                "build-essential`; `which c++` must answer)" if no_cc
                                                                else "") + ".",
           "Or build the ops when installing instead of at run time (DeepSpeed: `DS_BUILD_OPS=1 pip install deepspeed "
           "--no-build-isolation`, or DS_BUILD_FUSED_ADAM=1 for this op alone), with nvcc matching torch.version.cuda.")
    return Diagnosis(message=msg, fix=fix)


# the lines xformers/_cpp_lib.py prints under its warning: what the wheel was built for, and what the run has
_XFORMERS_BUILT = lazyre.compile(r"(?P<what>PyTorch|Python)\s+(?P<built>\S+)(?: with CUDA \d+)? \(you have (?P<have>[^)\s]+)\)")


def _xformers_pair(hits: list[Hit], ctx: RunState) -> Diagnosis:
    pairs: list[re.Match[str]] = []
    for hit in hits:   # (a title that quotes the warning has no pair under it; the log's own warning has)
        following = ctx.lines_after(hit.line.where.path, hit.line.seq, 3) if hit.line is not None else []
        pairs = [m for t in [hit.evidence.text, *(line.text for line in following)]
                 for m in [_XFORMERS_BUILT.search(t)] if m]
        if pairs:
            break
    differ = [f"{m.group('what')} {m.group('built')} (the run has {m.group('have')})" for m in pairs
              if m.group("built") != m.group("have")]
    shown = (f"the wheel was built for {'; '.join(differ)}" if differ else
             "the lines under the warning, which say what the wheel was built for, are not in the paste")
    torch_pair = next((m for m in pairs if m.group("what") == "PyTorch"), None)
    install = (f"pip install xformers built for torch {torch_pair.group('have')} (the xformers release that pins "
               f"that torch, from the index of its CUDA build)" if torch_pair else
               "pip install the xformers release that pins the installed torch")
    return Diagnosis(
        message=f"xformers' compiled kernels do not load: {shown}. xformers warns and goes on "
                f"without them (memory-efficient attention, SwiGLU), so whatever needs xformers then fails or runs on "
                f"a slower path.",
        fix=(f"Make the pair match: {install}; or uninstall xformers so the framework uses PyTorch's SDPA or "
             f"flash-attn instead.",
             "When an installer or image put this pair together (a packaged app, a Docker image), update it to the "
             "release that ships a matching build."),
        severity=Severity.warning,
        title="xformers was built for another torch/Python than the one installed")


# bitsandbytes/cextension.py (0.43-0.45) get_native_library: it loads libbitsandbytes_cuda<VER>.so for torch's CUDA (or
# for BNB_CUDA_VERSION when set), logs "Could not find the bitsandbytes CUDA binary at ..." when that file is absent and
# falls back to libbitsandbytes_cpu.so; with that one absent too, the package holds no native library at all
_BNB_OVERRIDE = lazyre.compile(r"BNB_CUDA_VERSION=(?P<ver>\d+) environment variable detected")


def _bnb_no_native(ctx: RunState) -> Diagnosis:
    texts = [t.text for tail in ctx.tails.values() for t in tail]
    override = next((m.group("ver") for m in (_BNB_OVERRIDE.search(t) for t in texts) if m), None)
    cuda_missing = any("Could not find the bitsandbytes CUDA binary" in t for t in texts)
    msg = ("bitsandbytes found neither " + ("the CUDA library it looked for nor " if cuda_missing else "")
           + "its CPU fallback (libbitsandbytes_cpu.so): the installed package holds no native library, so every "
             "4-/8-bit operation fails.")
    fix = []
    if override:
        cuda = f"{override[:-1]}.{override[-1]}" if len(override) >= 2 else override  # 121 -> 12.1
        msg += (f" BNB_CUDA_VERSION={override} is set: it made bitsandbytes look for the library of CUDA {cuda} "
                f"instead of torch's.")
        fix.append("Unset BNB_CUDA_VERSION (`export BNB_CUDA_VERSION=`) so bitsandbytes loads the library of torch's CUDA.")
    fix.append("Install a release wheel, which ships the native libraries: `pip install --force-reinstall bitsandbytes`; "
               "a source checkout needs its native library built first (cmake with the CUDA backend, then make) "
               "before `pip install .`, and `python -m bitsandbytes` then reports which library it loads.")
    return Diagnosis(message=msg, fix=tuple(fix))
