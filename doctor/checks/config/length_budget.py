"""GD460: prompt (max_length) + completion (max_completion_length) must fit vLLM's and the model's context."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from ...values import as_int
from .._numbers import Num, assumptions, computed, read_or
from ._base import _ConfigRule, model_spec


class LengthBudget(_ConfigRule):
    """GD460: prompt (max_length) + completion (max_completion_length) must fit vLLM's and the model's context."""

    def check(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        ml = as_int(run.get("max_length"), floats=True)
        mcl_ = read_or(as_int(run.get("max_completion_length"), floats=True)
                       or as_int(run.get("max_new_tokens"), floats=True), 512)
        mcl = mcl_.value
        why = assumptions(("max_completion_length", mcl_), why="ms-swift's default, not in the command")
        vmax = as_int(run.get("vllm_max_model_len"), floats=True)
        spec = model_spec(ctx)
        mpos = spec.max_positions if spec is not None else None
        out = []
        if vmax and ml and vmax < ml + mcl:
            out.append(self.make(
                message=(f"--vllm_max_model_len {vmax} is shorter than max_length {ml} + max_completion_length {mcl_} "
                         f"= {computed(ml + mcl, mcl_)}: vLLM caps prompt + completion at {vmax}, so long prompts "
                         f"leave only {computed(max(vmax - ml, 0), Num(ml))} tokens to generate (completions are cut) "
                         f"or are rejected."),
                fix=[f"--vllm_max_model_len {ml + mcl} (max_length + max_completion_length){why}"]
                + ([f"or --max_length {vmax - mcl} to keep prompts within {vmax} - {mcl_}{why}."] if vmax > mcl else
                   [f"--vllm_max_model_len {vmax} leaves no room for a prompt next to max_completion_length "
                    f"{mcl_}{why}."])))
        if ml and ml < mcl:
            out.append(self.make(
                message=(f"--max_length {ml} is smaller than --max_completion_length {mcl_}. In GRPO ms-swift applies "
                         f"max_length to the prompt (truncation_strategy decides what happens to longer ones) and "
                         f"generates up to max_completion_length on top; a max_length below the completion length is "
                         f"usually a total budget split the wrong way round, and prompts longer than {ml} tokens "
                         f"are cut or dropped."),
                fix=[f"Set --max_length to the longest prompt you expect (e.g. {max(1024, ml)}) and keep "
                     f"--max_completion_length {mcl_} for the answer{why}.",
                     "With vLLM, --vllm_max_model_len >= max_length + max_completion_length."]))
        if mpos and (ml or 0) + mcl > mpos:
            total = computed((ml or 0) + mcl, mcl_)
            budget = (f"max_length {ml} + max_completion_length {mcl_} = {total}" if ml else
                      f"max_completion_length {mcl_} (max_length unset)")
            out.append(self.make(
                message=f"{budget} exceeds the model's max_position_embeddings {mpos} (config.json).",
                fix=[f"Keep max_length + max_completion_length <= {mpos}{why}."]))
        return out[:2]
