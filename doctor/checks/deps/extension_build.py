"""GD458: a C++/CUDA extension compiled on first use (torch.utils.cpp_extension: DeepSpeed ops, flash-attn) whose
build failed: the extension's name and the compiler's first error, as the build printed them."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# headers of the CUDA toolkit (cuda_runtime.h, cuda_profiler_api.h, cublas_v2.h, cusparse.h, curand.h, nvToolsExt.h):
# a toolkit without development headers (a runtime-only cudatoolkit) or CUDA_HOME pointing elsewhere
_CUDA_HEADER = lazyre.compile(r"^(?:cuda\w*|cu(?:blas|sparse|rand|solver|fft)\w*|nv\w+|thrust/\S+|cub/\S+)\.h\b")
_MISSING = lazyre.compile(r"^(?P<header>[\w./\-]+\.h(?:pp)?): No such file or directory")


# torch/utils/cpp_extension.py names the module it builds or loads before the build runs ("Building extension module
# fused_adam...", "Loading extension module fused_adam..."): the name when the build's own error line is cut
_MODULE_LINE = lazyre.compile(r"(?:Building|Loading) extension module (?P<ext>[\w.\-]+)\.\.\.")


def _module_named(ctx: RunState) -> str | None:
    for tail in ctx.tails.values():
        for ln in reversed(tail):
            if "extension module" in ln.text:
                m = _MODULE_LINE.search(ln.text)
                if m:
                    return m.group("ext")
    return None


def _prebuild(ext: str | None, hits: list[Hit]) -> str:
    """How to build the op at install time instead: DeepSpeed's setup.py reads DS_BUILD_<OP NAME> for each op."""
    deepspeed = ext in _DS_OPS or any("deepspeed" in h.evidence.text for h in hits)
    if ext and deepspeed:
        extra = " (cpu_adam serves CPU offload of the optimizer)" if ext == "cpu_adam" else ""
        return (f"Or avoid compiling at run time: build DeepSpeed's op when DeepSpeed is installed "
                f"(`DS_BUILD_{ext.upper()}=1 pip install deepspeed --no-cache-dir`; `ds_report` lists which ops are "
                f"compatible and installed){extra}; the CUDA toolkit the build finds must match torch's CUDA version "
                f"(`python -c 'import torch; print(torch.version.cuda)'` against `nvcc --version`).")
    return ("Or avoid compiling at run time: DeepSpeed ops can be built when DeepSpeed is installed "
            "(`DS_BUILD_<OP>=1 pip install deepspeed`, `ds_report` lists which load), and flash-attn and similar "
            "packages have prebuilt wheels per torch, CUDA and Python version.")


# DeepSpeed's op builders (deepspeed/ops/op_builder/*.py NAME): the ops a DeepSpeed run compiles on first use
_DS_OPS = frozenset({"cpu_adam", "cpu_adagrad", "cpu_lion", "fused_adam", "fused_lamb", "fused_lion", "async_io",
                     "transformer", "transformer_inference", "stochastic_transformer", "quantizer", "utils",
                     "sparse_attn", "spatial_inference", "random_ltd", "evoformer_attn", "inference_core_ops",
                     "ragged_device_ops", "ragged_ops", "fp_quantizer", "gds", "cpu_adam_xpu"})


# a compiler's own error line among the build's output: nvcc's "nvcc fatal   : ...", gcc/clang "file:line: error: ..."
# and "fatal error: ..."
_COMPILER_ERROR = lazyre.compile(r"\bnvcc fatal\s*:\s*(?P<nvcc>.+)|(?:^|\s)(?:fatal )?error:\s*(?P<cc>\S.+)")
# nvcc before CUDA 11 knows no -std=c++17, which torch 2.1+ extensions compile with (torch/utils/cpp_extension.py)
_NO_CXX17 = lazyre.compile(r"Value 'c\+\+17' is not defined for option 'std'")


def _compiler_error(ctx: RunState) -> str | None:
    """The first compiler error line the kept lines hold (before ninja gave up), as printed."""
    for tail in ctx.tails.values():
        for ln in tail:
            if "error" in ln.text or "fatal" in ln.text:
                m = _COMPILER_ERROR.search(ln.text)
                if m:
                    return ("nvcc fatal: " + m.group("nvcc").strip()) if m.group("nvcc") else m.group("cc").strip()
    return None


def extension_build_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    ext = next((h.groups["ext"] for h in hits if h.groups.get("ext")), None) or _module_named(ctx)
    first = next((h.groups["what"] for h in hits if h.groups.get("what")), None) or _compiler_error(ctx)
    name = f"The extension '{ext}'" if ext else "A C++/CUDA extension"
    # torch's cpp_extension is shown by its own re-raise or the exact ninja command it runs; ninja's own line shows a
    # ninja build (cmake's too); a compiler's line alone shows a build and nothing of who ran it
    torch = any(h.groups.get("ext") or "'ninja', '-v'" in h.evidence.text for h in hits)
    ninja = any("ninja" in h.evidence.text for h in hits)
    msg = (f"{name} was compiled at run time (torch's cpp_extension, through ninja) and the build failed" if torch else
           f"{name} failed to compile (a ninja build)" if ninja else f"{name} failed to compile")
    linked = next((h.groups["what"] for h in hits if "ld: cannot find" in h.evidence.text and h.groups.get("what")),
                  None)
    obj = linked is not None and linked.endswith(".o")
    if linked is not None:
        # the link step: an object the compile step should have produced, or a library the linker cannot see
        msg += (f"; the linker could not find `{linked}`"
                + (": an object file of the build itself, so a compile step before the link did not produce it (its "
                   "error, or a build that skips compiling, comes before this line)." if obj else
                   ": a library the link needs is not on the linker's path."))
    else:
        msg += f"; the compiler's first error: {first}." if first else \
            ". The compiler's own error is printed above 'ninja: build stopped' (not in this excerpt)."
    fix: list[str] = []
    missing = _MISSING.match(first or "")
    header = missing.group("header") if missing else None
    if obj:
        fix.append("Read the build's output above the link line for the first compile error; when there is none, the "
                   "package's build skipped compiling that source: install a release whose build works (a prebuilt "
                   "wheel, or the release before the one that fails), and pass `--no-cache-dir` so that pip does not "
                   "reuse the failed build.")
    elif linked is not None:
        fix.append(f"Install the library behind `{linked}` (for -lcudart, -lcublas and the like: the CUDA toolkit of the "
                   "version torch was built with) and put its lib folder on LIBRARY_PATH or in CUDA_HOME.")
    elif first and _NO_CXX17.search(first):
        fix.append("nvcc rejects -std=c++17: the CUDA toolkit the build found is older than CUDA 11, and torch 2.1+ "
                   "compiles its extensions as C++17. Point CUDA_HOME (and PATH) at a toolkit of the CUDA version torch "
                   "was built with (`python -c 'import torch; print(torch.version.cuda)'` against `nvcc --version`).")
    elif header and _CUDA_HEADER.match(header):
        fix.append(f"{header} is a CUDA toolkit header: the toolkit the build uses has no development headers (a "
                   "runtime-only cudatoolkit, or CUDA_HOME pointing at another install). Install the full CUDA "
                   "toolkit of the version torch was built with (`python -c 'import torch; print(torch.version.cuda)'` "
                   "against `nvcc --version`) and set CUDA_HOME to it.")
    elif header == "Python.h":
        fix.append("Python.h is Python's development header: install the Python headers of this interpreter "
                   "(python3-dev / python3.X-dev, or a conda Python, which ships them).")
    elif header:
        fix.append(f"Install what provides {header} (the package the compiler's include path expects), then rerun.")
    elif not first:
        fix.append("Rerun and keep the lines above 'ninja: build stopped': the first line with 'error' is the cause.")
    fix.append(_prebuild(ext, hits))
    return Diagnosis(message=msg, fix=tuple(fix))
