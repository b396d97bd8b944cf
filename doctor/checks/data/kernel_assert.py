"""GD449: a CUDA kernel's own input check failed (device-side assert). The kernel's assert line names the condition; the
condition names the input that broke it. Knowledge of torch's kernel asserts is kept here, once (a fixer: pure)."""
from __future__ import annotations

import re
from typing import NamedTuple

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ..fallback.native import in_vllm


class KernelCheck(NamedTuple):
    condition: re.Pattern[str]   # over the assert's condition
    reading: str        # what the failed condition means for a training run
    category: str
    fix: tuple[str, ...]


_LABELS_FIX = (
    "Check the labels the loss gets before training: every label is -100 (ignored) or in [0, number of classes): "
    "for a language model `labels[labels != -100].min() >= 0` and `.max() < model.get_output_embeddings().weight."
    "shape[0]`; for a classifier `labels.max() < config.num_labels`.",
    "Mask padding and prompt tokens with -100 (not -1 or the pad id); after adding tokens to the tokenizer call "
    "model.resize_token_embeddings(len(tokenizer)); tokenize the data with the model's own tokenizer; number a "
    "classifier's labels from 0 and set num_labels to the number of classes.",
)

# the conditions of torch's kernel asserts (aten/src/ATen/native/cuda/*.cu, THCUNN before torch 1.7) that the rules own
# elsewhere: GD448 (Indexing.cu index_select), GD621 (multinomial's probability check)
_OWNED = lazyre.compile(r"srcIndex < srcSelectDimSize|probability tensor contains")
_CHECKS: tuple[KernelCheck, ...] = (
    # Loss.cu nll_loss_forward/backward kernels, NLLLoss2d.cu; THCUNN ClassNLLCriterion.cu (`cur_target` in THNN's CPU
    # copy): the target of nll_loss / cross_entropy outside [0, n_classes) and not the ignore index
    KernelCheck(lazyre.compile(r"\b(?:t|cur_target) >= 0 && (?:t|cur_target) < n_classes\b"),
                "the loss (nll_loss, which cross_entropy calls) got a target class outside [0, number of classes) "
                "that is not the ignore index -100: in a language model a label id at or past the output layer's "
                "vocabulary (tokens added to the tokenizer without resizing the model, labels from another "
                "tokenizer) or a negative label other than -100 (padding labelled -1 or with a pad id); in a "
                "classifier a label at or past num_labels",
                "dataset-or-template-error", _LABELS_FIX),
    # Loss.cu binary_cross_entropy: the input must be a probability; NaN fails both comparisons
    KernelCheck(lazyre.compile(r"input_val >= zero && input_val <= one"),
                "binary_cross_entropy got an input outside [0, 1]: logits passed where probabilities belong, or NaN "
                "from a model that diverged (NaN fails the check too)",
                "other",
                ("Pass logits to binary_cross_entropy_with_logits (BCEWithLogitsLoss) instead of "
                 "binary_cross_entropy, and check the model's outputs for NaN before the loss.",)),
    # IndexKernel.cu (`-sizes[i] <= index && index < sizes[i] && "index out of bounds"`), ScatterGatherKernel.cu
    # (`idx_dim >= 0 && idx_dim < index_size && "index out of bounds"`), torch.compile's generated kernels
    # (`index out of bounds: 0 <= tmp3 < 32000`)
    KernelCheck(lazyre.compile(r"index out of bounds"),
                "an index was past the size of the dimension it indexes (advanced indexing, gather/scatter, or a "
                "kernel torch.compile generated): in a language model most often a token id past the vocabulary "
                "or a position past the sequence",
                "other",
                ("Rerun once with CUDA_LAUNCH_BLOCKING=1 (and torch.compile off) so that the traceback names the "
                 "indexing line, then check the indices it uses against the size of that dimension "
                 "(max(input_ids) against len(tokenizer) and the embedding's rows).",)),
)

_GENERIC_READING = ("a label past the vocabulary in the loss (`t >= 0 && t < "
                    "n_classes`), a token id past the embedding (`srcIndex < srcSelectDimSize`) and sampling from "
                    "NaN probabilities (`probability tensor contains either inf, nan or element < 0`)")
_ASYNC = ("CUDA reports the error at a later call, so the Python frames may name the wrong line, and every CUDA call "
          "of that process fails the same way afterwards: errors printed after it are consequences.")


def kernel_assert_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    conditions = [h for h in hits if h.groups.get("kexpr")]
    if any(_OWNED.search(h.groups["kexpr"]) for h in conditions):
        return None   # GD448 / GD621 read that condition and compute its fix
    vllm = in_vllm(hits[0], ctx)
    if conditions:
        return _with_condition(conditions[0], vllm)
    where = _frames_place(hits[0])
    msg = ("CUDA reported a device-side assert: a kernel's own check of its inputs failed on the GPU. The kernel's "
           "line (`<file>.cu:<line>: <kernel>: ... Assertion `<condition>` failed.`), printed to stderr just before "
           "the error, names the check; it is not in this log. " + _ASYNC + where
           + f" Without it, the usual failed checks in training are {_GENERIC_READING}.")
    fix = ("Paste the `Assertion `...` failed.` lines printed just above the error (the stderr of the rank that "
           "failed): their condition names the input that broke the check.",
           "Rerun once with CUDA_LAUNCH_BLOCKING=1 so that the traceback stops at the failing call; check "
           "max(input_ids) and the labels against len(tokenizer) and the model's embedding rows (labels to ignore "
           "are -100).")
    if vllm:
        return Diagnosis(message=msg + " It happened in the vLLM engine (its prefixes, logger lines or frames are "
                                       "around the error).", fix=fix, category="vllm-engine-error",
                         confidence="possible")
    return Diagnosis(message=msg, fix=fix, confidence="possible")


def _with_condition(hit: Hit, vllm: bool) -> Diagnosis:
    cond = hit.groups["kexpr"].strip()
    kernel = _KERNEL.search(hit.line.raw if hit.line is not None else "")
    named = f" in `{kernel.group('kernel')}` ({kernel.group('file')})" if kernel else ""
    check = next((c for c in _CHECKS if c.condition.search(cond)), None)
    if check is None:
        msg = (f"A CUDA kernel's check of its inputs failed on the GPU{named}: `{cond[:200]}` was false "
               f"(device-side assert). {_ASYNC}")
        fix = ("The condition names the kernel's inputs: find which tensor of the failing call holds a value outside "
               "it (rerun once with CUDA_LAUNCH_BLOCKING=1 so that the traceback stops at that call).",)
        return Diagnosis(message=msg, fix=fix, category="vllm-engine-error" if vllm else None,
                         confidence="possible")
    msg = (f"A CUDA kernel's check of its inputs failed on the GPU{named}: `{cond[:200]}` was false, so "
           f"{check.reading}. {_ASYNC}")
    return Diagnosis(message=msg, fix=check.fix + (
        "Rerun once with CUDA_LAUNCH_BLOCKING=1 if the traceback does not show the call that failed.",),
        category="vllm-engine-error" if vllm and check.category == "other" else check.category)


# the kernel's file and name before the condition (`../aten/src/ATen/native/cuda/Loss.cu:271:
# nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], ...`); threads' copies of the line may be interleaved
_KERNEL = lazyre.compile(r"(?P<file>[\w./\\-]+\.cuh?):\d+: (?:void )?(?P<kernel>\w+)[^:]*?(?:\[with [^\]]*\])?: block:")
# where the frames of the exception put the failing call (the innermost frame the traceback shows)
_PLACES = (("cross_entropy", "a loss (cross_entropy / nll_loss: the labels)"), ("nll_loss", "a loss (nll_loss: the labels)"),
           ("embedding", "an embedding lookup (the token ids)"), ("multinomial", "sampling (the probabilities)"),
           ("sample", "sampling (the probabilities)"), ("generate", "generation"))


def _frames_place(hit: Hit) -> str:
    frames = hit.exc.frames if hit.exc is not None else ()
    for frame in reversed(frames):
        for word, place in _PLACES:
            if word in frame.func or word in frame.code:
                return (f" The traceback's innermost named call is {place} ({frame.func} in {frame.path.rsplit('/', 1)[-1]}"
                        f"), which the assert may or may not be in.")
    return ""
