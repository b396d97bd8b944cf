"""GD451: --use_vllm true, but vLLM cannot be imported."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit


def vllm_missing_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    return Diagnosis(
        message="--use_vllm true, but vLLM cannot be imported in this environment (not installed, or its "
                "import failed).",
        fix=("pip install vllm (README: vllm >=0.5.1, recommended 0.11.0 or 0.23.0). A vllm wheel pins the torch "
             "it was built with, so install it first or in a fresh environment and let it choose torch.",
             "Check that it imports: python -c 'import vllm' (an ImportError there names the real cause).",
             "Or generate with transformers instead (much slower): --use_vllm false."))
