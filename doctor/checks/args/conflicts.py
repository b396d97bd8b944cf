"""GD413: other arguments ms-swift refuses together (or without a companion flag)."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...swift.run import tuner_flag
from ...values import as_int
from .._numbers import Num, assumptions, computed, read_or
from ._layout import nproc_per_node

_MISC = {
    "gbs_spg": ("--generation_batch_size and --steps_per_generation were both set; they define the same thing.",
                ["Keep one: generation_batch_size = world size x per_device_train_batch_size x steps_per_generation."]),
    "reasoning": ("--vllm_reasoning_parser is for serving; GRPO training refuses it (ms-swift >= 3.8).",
                  ["Drop --vllm_reasoning_parser; parse the reasoning in your reward function instead."]),
    "soft_cache": ("The soft_overlong reward needs --soft_cache_length (the length of the penalty ramp before "
                   "soft_max_length).", []),
    "not_adapter": ("A directory passed with --adapters holds no adapter_config.json: it is a full model.", []),
    "liger_dm": ("liger_kernel does not work with device_map (several GPUs per process).",
                 ["Set NPROC_PER_NODE to the number of visible GPUs (DDP/DeepSpeed), or drop --use_liger_kernel."]),
    "liger": ("The Liger GRPO loss does not support a feature this run enables.",
              ["Drop --use_liger_kernel, or turn the listed feature off."]),
    "flash": ("padding_free/packing needs a flash-attention implementation.",
              ["--attn_impl flash_attn (pip install flash-attn --no-build-isolation), or drop --padding_free/"
               "--packing."]),
    "ref_lora": ("LoRA GRPO uses the base model with the adapter disabled as its reference, so --ref_model is refused.",
                 ["Drop --ref_model (or train full: --tuner_type full)."]),
    "tuner": ("The tuner type is not one ms-swift knows.", []),
    "adapters": ("Training accepts a single --adapters directory.", ["Pass one adapter directory (merge the others "
                                                                     "first with swift export --merge_lora true)."]),
    "best": ("load_best_model_at_end needs checkpoints at evaluation steps.",
             ["Use the same --save_strategy and --eval_strategy, with --save_steps a multiple of --eval_steps; or "
              "drop --load_best_model_at_end."]),
    "async_mt": ("Async generation does not support multi-turn rollouts.",
                 ["Drop --async_generate, or the multi-turn scheduler."]),
}

_DEFAULT = "ms-swift's default, not in the inputs"


def misc_arg_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    key = next((k for k in _MISC if g.get(k)), None)
    if key is None:
        return Diagnosis()
    msg, fix = _MISC[key]
    fix = list(fix)
    if key == "gbs_spg":
        n = read_or(run.world_size() or nproc_per_node(run), 1)
        b = read_or(as_int(run.get("per_device_train_batch_size")), 1)
        gbs, spg = as_int(run.get("generation_batch_size")), as_int(run.get("steps_per_generation"))
        if gbs and spg:
            fix = [f"Keep one: --generation_batch_size {gbs} alone, or --steps_per_generation {spg} alone (world size "
                   f"{n} x per_device_train_batch_size {b} x {spg} = {computed(n.value * b.value * spg, n, b)} "
                   f"completions per generation"
                   f"{assumptions(('world size', n), ('per_device_train_batch_size', b), why='not in the inputs')}); "
                   f"both must give a multiple of num_generations."]
    if key == "soft_cache":
        mcl = read_or(as_int(run.get("max_completion_length")), 512)
        smax_in = as_int(run.get("soft_max_length"))
        smax = Num(smax_in) if smax_in else mcl  # unset, it is max_completion_length (known as that one is)
        fix = [f"--soft_cache_length {max(smax.value // 4, 1)} (a quarter of soft_max_length {smax}; soft_max_length "
               f"defaults to max_completion_length {mcl})"
               f"{assumptions(('max_completion_length', mcl), why=_DEFAULT)}."]
    elif key == "not_adapter":
        d = g.get("adapter") or "<dir>"
        fix = [f"Pass it as --model {d} (full weights), or point --adapters at a LoRA checkpoint "
               f"(adapter_config.json + adapter_model.safetensors)."]
    elif key == "tuner":
        fix = [f"--{tuner_flag(run)} lora or full (other ms-swift tuners: longlora, adalora, llamapro, "
               f"adapter, vera, boft, fourierft, reft, bone)."]
    elif key == "liger" and g.get("feat"):
        msg = f"The Liger GRPO loss does not support {g['feat']}."
    return Diagnosis(message=msg, fix=tuple(fix))
