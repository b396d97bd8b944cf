"""GD456: ``cannot import name``: the importing code was written for another release of the package, or (with
``(unknown location)``) a local folder shadows the package."""
from __future__ import annotations

from dataclasses import replace

from ...classify.component import package_of
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import version_label
from ._frames import importer, short_path
from ._versions import README_RANGES, swift_module_move

# names users import from a GRPO library directly, and the release that added them (trl v0.14.0 release notes: GRPO
# added, trl/trainer/grpo_config.py and grpo_trainer.py first in 0.14)
_FIRST_IN = {("trl", "GRPOConfig"): "0.14", ("trl", "GRPOTrainer"): "0.14"}


def cannot_import_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    name, mod = g.get("name") or "?", g.get("mod") or "?"
    top = mod.split(".")[0]
    frame = importer(hits[0].exc)
    by = f" (imported by {short_path(frame.path)}:{frame.lineno})" if frame else ""
    exc = hits[0].exc
    if exc is not None and "(unknown location)" in exc.message:
        # CPython's words for a namespace package (importlib: a folder without __init__.py, no file): not the
        # installed release but a folder of that name that comes first on sys.path
        return Diagnosis(
            message=f"`{mod}` was imported from a folder without files (\"unknown location\"){by}: most often a "
                    f"directory named `{top}` in the working directory or on PYTHONPATH that shadows the installed "
                    f"{top}, or an install of it left without its __init__.py; either way `{name}` is not found "
                    f"whatever release is installed.",
            fix=(f"Rename or move the local `{top}` folder (or run from another directory); check with "
                 f"`python -c 'import {top}; print({top}.__path__)'`.",),
            title=f"A folder named {top} without files shadows the installed package")
    if mod.startswith("swift.llm") and "vllm" in name.lower():
        # ms-swift 1.x-2.x swift/llm/utils/__init__.py: `if is_vllm_available(): from .vllm_utils import
        # (VllmGenerationConfig, get_vllm_engine, inference_vllm, ...)` inside `try/except Exception`, which logs
        # "import vllm_utils error: ..." and goes on: the helpers are missing whenever vLLM does not import
        ver = run.versions.get("vllm")
        shown = f" (the paste shows vllm {ver})" if ver else ""
        return Diagnosis(
            message=f"`{name}` cannot be imported from `{mod}`{by}: ms-swift's swift.llm (1.x-2.x) exports its vLLM helpers "
                    f"(get_vllm_engine, inference_vllm, VllmGenerationConfig...) only when vLLM itself imports; when it "
                    f"does not, swift logs `import vllm_utils error: ...` and leaves them out. vLLM is not installed, "
                    f"or its installed release does not import in this environment{shown}: it does not fit the "
                    f"installed torch, CUDA or ms-swift.",
            fix=("`python -c 'import vllm'` shows why vLLM does not import (or the `import vllm_utils error:` line "
                 "of the log); install a vLLM release this ms-swift supports, built for the installed torch and "
                 "CUDA" + (f" (another than {ver})." if ver else "."),),
            title="swift.llm left its vLLM helpers out: vLLM does not import")
    if top == "swift":
        # the 4.0 reorganisation explains a 3.x module missing from a 4.x install; a name missing from a module that a
        # 3.x install has (its path in the message, or the run's own 3.x) is another release's name instead
        moved = swift_module_move(mod, run) if run.major is None or run.major >= 4 else None
        if moved:
            return replace(moved, message=f"`{name}` cannot be imported from `{mod}`{by}. " + moved.message)
        return Diagnosis(
            message=f"`{name}` is not in `{mod}` in {version_label(run)}{by}: the code was written for another "
                    f"ms-swift release.",
            fix=("Install the ms-swift release the code targets, or update the import to this release.",))
    msg = (f"The installed {top} has no `{name}` in `{mod}`{by}: the importing code was written for another {top} "
           f"release.")
    first = _FIRST_IN.get((top, name))
    if first:
        msg += f" `{name}` first shipped in {top} {first}."
    swift_run = ctx.framework()[0] == "ms-swift" or bool(frame and "swift" in frame.path)
    if swift_run:
        fix = [f"pip show {top} ms-swift, then install the {top} version the importing package pins"
               + (f" (ms-swift README: {README_RANGES[top]})." if top in README_RANGES else ".")]
    else:
        pkg = package_of(frame.path) if frame else None
        who = f"the installed {pkg} pins (pip show {pkg}: Requires)" if pkg and not pkg.startswith("<") else \
            "the importing code pins (its requirements or README)"
        fix = [f"pip show {top}, then install a {top} release that has `{name}`"
               + (f" (>= {first}: pip install -U '{top}>={first}')" if first else "") + f", or the one {who}."]
    if frame and "swift" in frame.path:
        fix.append(f"ms-swift itself imports it here: pip install 'ms-swift==<your version>' reinstalls a matching "
                   f"{top}.")
    return Diagnosis(message=msg, fix=tuple(fix))
