"""Which part of a component failed, and the fix in the terms of the framework that ran: read from the frames, the
notice printed before a traceback and the rollout server's last request. Used by the structural findings
(doctor/checks/fallback/structural.py) to say more than "the vLLM engine failed".

Each part is backed by the library source that defines it (cited per entry) and by real cases:
- vLLM LoRA kernels: vLLM 0.6-0.11 ``vllm/lora/`` (punica / triton ``lora_shrink_op``, ``lora_expand_op``), loaded when
  the trainer syncs an adapter instead of merged weights (ms-swift ``--vllm_enable_lora``, unsloth
  ``fast_inference`` with LoRA); cases modelscope/ms-swift#6670, vllm-project/vllm#26991 (Qwen3-VL with LoRA,
  vllm/lora/layers), vllm-project/vllm#35889 (``assert inputs.is_contiguous()`` in lora_shrink_op.py with TP).
- weight loading on a sync: the rollout server's update routes (ms-swift ``swift/llm/infer/rollout.py``
  ``/update_flattened_params/``, trl ``trl/scripts/vllm_serve.py`` ``/update_named_param/``) call the model's
  ``load_weights`` through ``collective_rpc``; vLLM ``model_executor/model_loader``; case modelscope/ms-swift#7270.
- the NCCL group between trainer and server: trl ``vllm_serve.py`` ``init_communicator`` and ms-swift's
  ``/init_communicator/`` build a PyNcclCommunicator (vLLM ``distributed/device_communicators/pynccl.py``); NCCL
  refuses two ranks of one communicator on one GPU (NCCL docs, communicators); cases PrimeIntellect-ai/verifiers#139,
  huggingface/trl#3487 and huggingface/trl#3158 (trl vllm-serve sharing the trainer's only GPU).
- asynchronous generation: ms-swift 3.x ``trainers/rlhf_trainer/grpo_trainer.py`` submits ``infer_task`` to a
  ThreadPoolExecutor when ``--async_generate true``; the engine is then driven from a worker thread
  (concurrent/futures/thread.py in the stack, the inference inside the worker); case modelscope/ms-swift#4418 (vLLM's
  `Forward context is not set` assertion from that thread). Not ms-swift 4.x's pool that encodes a batch's requests
  (InferEngine._batch_encode): the template's errors come through that one.
Pure: frames and strings in, strings out.
"""
from __future__ import annotations

from typing import NamedTuple

from ..signals import Frame


class Part(NamedTuple):
    id: str
    what: str                 # one sentence: what failed, as the evidence shows it
    fix: tuple[str, ...]      # framework-independent fix lines
    by_framework: dict        # framework -> fix line in its terms (None: any other)
    cases: str = ""           # the usual causes, said only when the run's own evidence does not name one


def _hay(frames: tuple[Frame, ...]) -> str:
    return " ".join(f"{f.path.replace(chr(92), '/')} {f.func}" for f in frames)


_LORA = Part(
    "vllm-lora",
    "The failing frames are vLLM's LoRA kernels (vllm/lora/: the punica/triton shrink-expand ops): the engine was "
    "serving a LoRA adapter synced from the trainer, and the installed vLLM's LoRA path does not handle this "
    "model or batch (a kernel bug or an unsupported layer of the architecture), not a trainer argument.",
    ("Upgrade vLLM to a release whose LoRA support covers this architecture (and the trainer to one that supports "
     "that vLLM).",),
    {"ms-swift": "ms-swift: --vllm_enable_lora false, so the trainer merges the adapter and syncs full weights "
                 "instead of loading a LoRA into vLLM (slower sync, no vLLM LoRA kernels).",
     "unsloth": "unsloth: load the model with fast_inference=False (no vLLM LoRA), or upgrade unsloth and vLLM together.",
     None: "Sync merged weights to the engine instead of a LoRA adapter (turn the engine's LoRA support off)."})
_WEIGHTS = Part(
    "vllm-weight-load",
    "The engine failed while loading weights the trainer pushed to it (the trainer's sync call, then the model's "
    "load_weights): the names, shapes or dtypes the trainer exports do not fit what this "
    "vLLM version's model class expects (MoE, quantised or multimodal models in particular).",
    ("Check that the installed vLLM supports this model and that trainer and vLLM versions are a documented pair; "
     "compare the exported weight names with the model's (a rename between releases breaks the sync).",),
    {"ms-swift": "ms-swift: --enable_flattened_weight_sync false (send named parameters instead of flattened "
                 "buckets); with Megatron, check the exported weights by loading them in vLLM alone.",
     "trl": "trl: upgrade trl and vLLM together (the /update_named_param/ route and the model's weight names must "
            "match).",
     None: "Sync weights one named parameter at a time instead of flattened buckets, if the trainer offers it."})
_CHECKPOINT_LOAD = Part(
    "vllm-checkpoint-load",
    "The engine failed while loading the model's checkpoint at start (its model_loader reading the safetensors "
    "shards into the model class): a weight name or shape in the checkpoint has no place in the architecture this "
    "vLLM builds for it.",
    ("Check that the installed vLLM supports the checkpoint's architecture and quantisation; the first names in the "
     "error are those the model class lacks.",),
    {},
    "Usual causes: a head the generative class does not have (`score`, `classifier`, `v_head` of a reward or "
    "sequence-classification checkpoint), quantisation tensors without the matching load format, or a checkpoint of "
    "a newer model revision than this vLLM knows.")
# neither a sync call nor a checkpoint loader in the evidence: the loader's model class refused a weight, from either
_LOAD_EITHER = Part(
    "vllm-weight-names",
    "The engine's model class refused a weight in its load_weights; no line here shows whether the weights came "
    "from the checkpoint at start or from a trainer's weight sync.",
    ("Check that the installed vLLM supports this model and its quantisation; if a trainer pushes weights into the "
     "engine, use trainer and vLLM releases documented to work together.",),
    {})
# what shows the weights came from a trainer's sync rather than the checkpoint on disk: the sync routes and calls
_SYNC_ROUTES = ("/update_flattened_params", "/update_named_param", "update_weights")
# (the structural entry trainer-weight-sync-vllm-loader lists the frames among these that prove a sync)
_SYNC_WORDS = _SYNC_ROUTES + ("collective_rpc", "_load_state_dict_to_vllm", "_move_model_to_vllm", "_sync_weights",
                              "load_weights_from_", "_sync_fsdp_params_to_vllm", "update_named_param",
                              "update_flattened_param", "sharding_manager", "update_weight", "sync_weights")
# vLLM <= 0.3 kept the loader in one file, vllm/model_executor/model_loader.py
_DISK_WORDS = ("Loading safetensors checkpoint shards", "model_loader/", "model_loader.py", " load_model",
               " initialize_model", "Loading pt checkpoint shards")
_NCCL = Part(
    "vllm-nccl-group",
    "NCCL failed inside the engine while the trainer and the rollout engine form or use their weight-sync "
    "communicator (PyNccl through collective_rpc): NCCL refuses two ranks of one communicator on the same GPU, "
    "and a P2P or driver problem fails the same way.",
    ("Run the rollout server and the trainer on different GPUs (distinct CUDA_VISIBLE_DEVICES), or generate in "
     "the trainer's process (colocate) instead of a server.",
     "NCCL_P2P_DISABLE=1 on both sides rules out a P2P transport problem; NCCL_DEBUG=INFO shows which step failed."),
    {"trl": "trl: `trl vllm-serve` on GPUs the trainer does not use (CUDA_VISIBLE_DEVICES), or GRPOConfig "
            "vllm_mode=\"colocate\".",
     "ms-swift": "ms-swift: `swift rollout` on GPUs the trainer does not use, or --vllm_mode colocate.",
     "verifiers": "verifiers: start the vLLM server on GPUs the trainer does not use (CUDA_VISIBLE_DEVICES).",
     None: "Start the vLLM server on GPUs the trainer does not use."})
_ASYNC = Part(
    "async-generation",
    "The rollout ran in a worker thread (concurrent.futures in the stack under the trainer's infer task): the "
    "trainer's asynchronous generation drives the engine from another thread than the one that created it, "
    "which this engine version does not support on every path (evaluation in particular).",
    ("Upgrade the trainer: asynchronous rollout was reworked in later releases.",),
    {"ms-swift": "ms-swift: --async_generate false (and, if it fails only during evaluation, --eval_strategy no "
                 "to confirm).",
     None: "Turn asynchronous generation off to confirm, then upgrade the trainer."})
_LAYOUT = Part(
    "vllm-parallel-layout",
    "",  # the table entry's doc already says it
    ("Upgrade vLLM and the trainer together to a documented pair that supports tensor-parallel engines colocated in a "
     "torchrun launch (the `external_launcher` executor).",),
    {"ms-swift": "ms-swift: keep NPROC_PER_NODE a multiple of --vllm_tensor_parallel_size, upgrade vLLM with ms-swift "
                 "(colocated TP > 1 needs the pair that builds per-engine groups), or --vllm_tensor_parallel_size 1.",
     "trl": "trl: GRPOConfig vllm_tensor_parallel_size must divide the processes; upgrade trl and vLLM together, or "
            "vllm_tensor_parallel_size=1.",
     None: "Make the engine's tensor-parallel size divide the number of processes, or use 1."})


def part_of(frames: tuple[Frame, ...], context: str = "") -> Part | None:
    """The part that failed: ``frames`` the stack, ``context`` the notice and the request lines before it."""
    hay = _hay(frames)
    if "vllm/lora/" in hay:
        return _LORA
    if "parallel_state" in hay and "world_size" in context:
        return _LAYOUT
    if "NCCL error" in context or "pynccl" in hay or "ncclInternalError" in context:
        return _NCCL
    if ("load_weights" in hay or "model_loader" in hay or "weight_loader" in hay
            or any(r in context for r in _SYNC_ROUTES)):
        if any(w in context or w in hay for w in _SYNC_WORDS):
            return _WEIGHTS
        if any(w in context or w in hay for w in _DISK_WORDS):
            return _CHECKPOINT_LOAD
        return _LOAD_EITHER
    if "concurrent/futures/thread.py" in hay and _worker_infers(frames):
        return _ASYNC
    return None


def _worker_infers(frames: tuple[Frame, ...]) -> bool:
    """Whether the work a thread pool ran (the frames inside its innermost worker, concurrent/futures/thread.py
    ``run``) is the rollout itself. The engine's own pool is not: ms-swift 4.x InferEngine._batch_encode
    (swift/infer_engine/infer_engine.py) encodes a batch's requests in a ThreadPoolExecutor under ``_infer``, so a
    template that cannot encode a row raises from a worker thread with no asynchronous generation in the run."""
    last = max((i for i, f in enumerate(frames) if "concurrent/futures/thread.py" in f.path.replace(chr(92), "/")),
               default=None)
    if last is None:
        return False
    worker = _hay(frames[last + 1:])
    return " infer_task" in worker or " _infer" in worker or "/vllm/" in worker


# vLLM request and engine features whose code paths fail on their own (a failed assert or a missing attribute that
# names one): turning the feature off removes the cause, which eager mode or one GPU cannot. Options as vLLM's
# EngineArgs and SamplingParams name them (vllm/engine/arg_utils.py, vllm/sampling_params.py, 0.5-0.11); cases
# primeintellect-ai/prime-rl#1359 (`assert not prompt_logprobs_tensors` in the V1 scheduler), vllm-project/vllm#16177
# (`no attribute 'sampler'` on the prompt-logprobs path), vllm-project/vllm#8268 (prefix caching with prompt_logprobs)
_FEATURES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("prompt_logprobs",),
     "The failing code is vLLM's path for prompt logprobs (SamplingParams.prompt_logprobs: the log-probabilities of "
     "the prompt's own tokens, which some trainers and evaluation harnesses request): the installed vLLM fails on "
     "that path for this model or configuration.",
     "Stop requesting prompt_logprobs (the sampling parameters the caller builds), or upgrade vLLM to a release that "
     "fixes this path; with prefix caching on, also try it off (enable_prefix_caching=False): cached prompt tokens "
     "have no logprobs to return in older releases."),
    (("prefix_caching", "prefix caching"),
     "The failing code is vLLM's automatic prefix caching (enable_prefix_caching: reusing the KV cache of shared "
     "prompt prefixes).",
     "Run the engine with prefix caching off (enable_prefix_caching=False; `vllm serve --no-enable-prefix-caching`) "
     "to confirm, then upgrade vLLM past the fix."),
    (("chunked_prefill", "chunked prefill"),
     "The failing code is vLLM's chunked prefill (enable_chunked_prefill: long prompts split across steps).",
     "Run the engine with chunked prefill off (enable_chunked_prefill=False; `--no-enable-chunked-prefill`) to "
     "confirm, then upgrade vLLM past the fix."),
    (("spec_decode", "speculative"),
     "The failing code is vLLM's speculative decoding (a draft model or n-gram proposer in front of the model).",
     "Run without the speculative configuration (no speculative_config / --speculative-model) to confirm."),
    (("guided_decoding", "structured_output", "xgrammar"),
     "The failing code is vLLM's guided decoding / structured output (a grammar or JSON schema constraining "
     "sampling).",
     "Run the request without guided decoding, or with another backend (guided_decoding_backend: xgrammar, outlines, "
     "guidance), to confirm."),
)


def feature_of(frames: tuple[Frame, ...], message: str = "", context: str = "") -> tuple[str, str] | None:
    """(what, fix) of the vLLM feature the failure names: in the failing frames' code or the exception's message
    first (the assert or attribute itself), else in the lines around it (a title: "AssertionError when using
    automatic prefix caching and prompt_logprobs")."""
    for hay in (" ".join(f.code for f in frames[-3:]) + " " + message, context):
        low = hay.lower()
        for words, what, fix in _FEATURES:
            if any(w in low for w in words):
                return what, fix
    return None


def part_fix(part: Part, framework: str | None) -> list[str]:
    line = part.by_framework.get(framework or "", part.by_framework.get(None))
    return ([line] if line else []) + list(part.fix)
