"""GD204, GD205, GD230: a log that ends inside a traceback whose exception line is missing; the stage the stack
was in (loss pass, vLLM engine creation or KV-cache init, vLLM engine configuration) names the likely failure."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from ... import lazyre
from ...classify.cut_stage import in_stage
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import Frame, LogLine
from ...swift.trainer_kind import GROUP_KINDS
from ..fallback.exceptions import CONSEQUENCE_TYPES, describe_frame
from ._facts import Facts, facts_of
from ._ladders import training_ladder, vllm_ladder
from ._oom import _KV_FUNCS, builds_vllm
from .kv_profile import BLOCKS

_LIB_TRANSPARENT = ("torch/", "transformers/", "peft/", "deepspeed/", "accelerate/", "flash_attn", "liger_kernel",
                    "pydantic", "trl/extras/profiling.py", "contextlib", "functools", "trl/trainer/utils.py")
_GRPO_PATHS = ("grpo", "rlhf_trainer", "rlhf_mixin")
_CONFIG_FUNCS = {"create_model_config", "create_engine_config", "create_load_config", "create_speculative_config",
                 "__post_init__", "from_cli_args", "__pydantic_validator__"}


# vLLM 0.4-0.6 workers run engine calls through worker_base.execute_method, which logs `Error executing method <name>.
# This might cause deadlock in distributed execution.` before the traceback: the method is the stage the stack was in
_EXECUTED = lazyre.compile(r"Error executing method '?(\w+)'?")


def with_executed_method(frames: tuple[Frame, ...], lines: list[LogLine]) -> tuple[Frame, ...]:
    """``frames`` with the method vLLM's execute_method named (in ``lines``, the log lines up to the stack's last) as
    the innermost frame, when the stack stops in execute_method itself (cut before the method's own frames)."""
    if not frames or frames[-1].func != "execute_method" or "vllm/" not in frames[-1].path.replace("\\", "/"):
        return frames
    name = next((m.group(1) for t in reversed(lines) if (m := _EXECUTED.search(t.text))), None)
    return frames if name is None else frames + (Frame(frames[-1].path, 0, name),)


def classify_cut(frames: tuple[Frame, ...]) -> tuple[str, Frame] | None:
    """Which stage a traceback that stops before its exception line was in: 'training', 'vllm-kv', 'vllm-init',
    'vllm-config', 'vllm-dist' (vLLM's distributed init: no memory reading); None when it is anything else."""
    for fr in reversed(frames):
        func, path = fr.func, fr.path
        if "/vllm/" in path and ("arg_utils" in path or "config" in path.rsplit("/", 1)[-1]) and func in _CONFIG_FUNCS:
            return "vllm-config", fr
        if func in _KV_FUNCS:
            return "vllm-kv", fr
        if in_stage("vllm-dist", fr):
            return "vllm-dist", fr
        if builds_vllm(fr) or "GRPOVllmEngine(" in fr.code or re.search(r"\bLLM\($", fr.code.strip()):
            return "vllm-init", fr
        if func in ("compute_loss", "_compute_loss", "_get_per_token_logps", "_get_per_token_logps_and_entropies",
                    "compute_liger_loss"):
            return "training", fr
        # a backward pass is where any trainer's memory may peak; only GRPO's (full-vocabulary logits of every
        # completion of the group) makes out of memory the likely failure of a stack cut there
        if func == "backward" and any(w in f.path.lower() for f in frames for w in _GRPO_PATHS):
            return "training", fr
        if "/vllm/" in path and func in ("__init__", "from_engine_args", "inner", "_init_executor", "__new__"):
            continue  # engine construction layers: look further out for what was being built
        if any(t in path for t in _LIB_TRANSPARENT):
            continue
        return None
    return None


# a line about GPU memory before the cut: the memory reading has evidence of its own
_MEMORY_WORDS = lazyre.compile(r"(?i)out of memory|\bOOM\b|KV cache|memory usage|GiB|free memory|"
                               r"gpu_memory_utilization|cache blocks")


class CutTraceback(Rule):
    """A log that ends inside a traceback whose exception line is missing: name the likely failure from the stage
    the stack was in (options.infer: training | vllm-init | vllm-config)."""

    kinds: frozenset[str] = frozenset()

    def feed(self, signal: Any) -> None:  # pragma: no cover - sees no signal
        pass

    def finish(self, ctx: RunState) -> list[Finding]:
        want = self.meta.options.get("infer", "training")
        if not ctx.open_tracebacks:
            return []
        if any(e.short_type not in CONSEQUENCE_TYPES for e in ctx.exceptions):
            return []  # a real exception line exists: the rules that read it speak
        line, frames = ctx.open_tracebacks[-1]
        from ..hang.prose import stopped_by_hand_said
        if stopped_by_hand_said(ctx.last_tail()) is not None:
            return []  # the author stopped a stuck run: the stack is where it sat (GD325), not a crash
        tail = ctx.tails.get(line.where.path)
        if tail and sum(1 for t in tail if t.seq > line.seq) > 4:
            return []  # the log goes on after this stack: not a cut excerpt
        before = [t for t in tail or () if t.seq <= line.seq]   # the log up to the stack's last line
        got = classify_cut(with_executed_method(frames, before))
        if got is None:
            return []
        stage, fr = got
        f = facts_of(ctx.run, frames)
        rank = f" on rank {line.rank}" if line.rank is not None else ""
        ev = [Evidence(line.where.path, line.where.line, line.raw)]
        from ..fallback.exceptions import notebook_header
        nb = notebook_header(ctx.tails, line)
        if nb is not None:  # a notebook header names the exception the paste cut: the first line to show
            ev.insert(0, Evidence(nb[0].where.path, nb[0].where.line, nb[0].raw))
        head = (f"The log ends inside a traceback{rank} before its exception line (the paste or the file was cut); "
                f"the innermost frame is {describe_frame(frames[-1])}.")
        fix_tail = "Find the exception line after this stack in the full log to confirm (pasted with the stack, it is read directly)."
        if want == "training" and stage == "training":
            kind = ctx.trainer_kind().kind
            if f.trainer is None and kind is not None:
                f.trainer = kind   # read from the trainer's frames: its levers follow (sequence length, no vLLM)
            if kind is None or kind in GROUP_KINDS:
                peak = ("where GRPO's GPU memory peaks: the policy forward over prompt + completion for the per-device "
                        "batch, with full-vocabulary logits")
            else:   # a supervised or preference run (read from its trainer's frames or command)
                peak = ("where a training step's GPU memory peaks: the model's forward and backward over the per-device "
                        "batch at its full sequence length, with full-vocabulary logits")
            grpo = kind is None or kind in GROUP_KINDS
            msg = (f"{head} The stack is in the loss pass ({fr.func}), {peak}. CUDA out of memory is the usual failure "
                   f"at this point" + ("." if grpo else ", but only one reading: a supervised or preference step does "
                                       "not peak far above its neighbours, and a loss kernel that refuses its input "
                                       "or option (a fused or chunked loss) fails at the same frames."))
            fix = training_ladder(f, {}) + [fix_tail]
            found = self.make(message=msg, fix=fix, evidence=ev, seq=line.seq, ranks=_r(line))
            # GRPO's loss pass holds a group's full-vocabulary logits: its memory peak makes out of memory the likely
            # reading; elsewhere the cut stack shows the phase, not the cause
            return [found if grpo else dataclasses.replace(found, confidence="possible",
                                                           alternatives=("argument-error-other", "other"))]
        if want == "vllm-init" and stage == "vllm-kv" and _flashinfer_sampler(fr, frames, ctx):
            found = self.make(
                message=f"{head} The stack is in vLLM's sampler warm-up ({fr.func}: the sampler run once on dummy "
                        f"logits while the engine starts), and the log names FlashInfer. With flashinfer installed, "
                        f"vLLM samples top-k/top-p with FlashInfer's kernels, which are compiled just in time (they "
                        f"need nvcc and CUDA_HOME) for the GPU at hand; a failure in this warm-up is then most often "
                        f"that kernel, and memory only the second reading.",
                fix=["Start vLLM with VLLM_USE_FLASHINFER_SAMPLER=0 in its environment (vLLM then samples with its "
                     "PyTorch top-k/top-p), or uninstall flashinfer there; if the start still fails at the same place, "
                     "read it as memory: a lower --vllm_gpu_memory_utilization or a shorter --vllm_max_model_len.",
                     fix_tail],
                evidence=ev, seq=line.seq, ranks=_r(line), confidence="likely", alternatives=("vllm-oom-or-kv-cache",),
                title="Traceback cut in vLLM's sampler warm-up, in a log that names FlashInfer")
            return [dataclasses.replace(found, category="vllm-engine-error")]
        if want == "vllm-init" and (stage == "vllm-kv" or (stage == "vllm-init" and (
                f.colocate or ((f.framework == "trl" or f.use_vllm is None) and trainer_evident(ctx, f))))):
            if stage == "vllm-kv":
                msg = (f"{head} The stack is in vLLM's KV-cache initialisation ({fr.func}): vLLM sizes its cache from "
                       f"gpu_memory_utilization x GPU memory minus what is already in use, and fails here when that is "
                       f"not free (out of memory, or 'No available memory for the cache blocks').")
                code = frames[-1].code.strip()
                if code.startswith("raise "):  # the statement that raised, printed as the last frame's source
                    msg += f" The last frame's source line is the raise itself: `{code[:160]}`."
                blocks = next((int(m.group(1)) for t in reversed(before) if (m := BLOCKS.search(t.text))), None)
                if blocks is not None:  # vLLM 0.4-0.6 executor log: raise_if_cache_size_invalid compares this
                    msg += (f" vLLM found room for {blocks} GPU blocks (read from the log): {blocks * 16} tokens at "
                            f"vLLM's default block size of 16 (assumed), and it refuses a max_model_len above that "
                            f"('The model's max seq len ... is larger than the maximum number of tokens that can be "
                            f"stored in KV cache').")
            else:
                callee = re.match(r"[\w.= ]*?(\w+)\($", fr.code.strip())
                what = f"{fr.func} -> {callee.group(1)}" if callee else fr.func
                msg = (f"{head} The stack is in the trainer's construction of the colocated vLLM engine "
                       f"({what}): on GPUs that already hold the training model, that fails when vLLM's "
                       f"memory share is not available.")
            if f.util is not None and f.use_vllm:
                msg += f" vllm_gpu_memory_utilization is {f.util_text()} here."
            if f.framework == "trl" and not f.util_set:
                fix = ["--vllm_gpu_memory_utilization 0.5 or lower (trl's default is 0.9 of the GPU) so the KV cache fits "
                       "next to what the training process already holds on that GPU.",
                       "--vllm_max_model_len <prompt + max_completion_length> (trl 0.15) to bound the KV cache a "
                       "single sequence needs.",
                       "Give vLLM a GPU of its own: trl 0.14-0.15 put it on vllm_device (default: the GPU after the "
                       "training ones), so launch with --num_processes one less than the GPUs; trl >= 0.16: "
                       "`trl vllm-serve` on its own GPU (vllm_mode server from 0.18)."]
            else:
                fix = vllm_ladder(f, None, "engine creation", "")
            from ...classify.hints import vllm_memory_note
            mem = vllm_memory_note("\n".join(t.text for t in before))
            if mem is not None:  # vLLM's own accounting line, printed before the failure
                msg += " " + mem[0]
                fix = [mem[1]] + fix
            found = self.make(message=msg, fix=fix + [fix_tail], evidence=ev, seq=line.seq, ranks=_r(line))
            # a memory share the run set at either end (0.1 leaves no KV-cache room; 0.9 colocated none beside training)
            extreme = f.util_set and f.util is not None and f.use_vllm and (f.util <= 0.3 or (f.colocate and f.util > 0.6))
            if stage == "vllm-init" and mem is None and not extreme and \
                    not any(_MEMORY_WORDS.search(t.text) for t in before):
                # the engine's construction, and no line about memory: memory is one reading among the engine's
                # other start-up failures (a model or argument it refuses), not the likely one
                found = dataclasses.replace(
                    found, category="vllm-engine-error", confidence="possible",
                    alternatives=("vllm-oom-or-kv-cache",),
                    title="Traceback cut while the trainer builds its vLLM engine (memory is one reading)",
                    message=msg + " No line of the log speaks of memory, so this is a reading of the phase only: "
                                  "vLLM also fails here on a model or an argument it refuses.")
            return [found]
        if want == "vllm-config" and stage == "vllm-config":
            srv = f.server_launch
            who = "trl's vllm-serve" if (srv and srv.command == "vllm-serve") or any("trl/" in x.path for x in frames) \
                else ("ms-swift" if f.framework == "swift" else "the caller")
            msg = (f"{head} The stack is in vLLM building its engine configuration ({fr.func}) from the arguments "
                   f"{who} passed: failures here are vLLM rejecting an argument or value, i.e. a vLLM release that "
                   f"does not match the {who.split(chr(39))[0].strip()} version (vLLM >= 0.9 validates its configs with "
                   f"pydantic and rejects e.g. None for boolean options).")
            vv = f.run.versions.get("vllm")
            fix = [("`pip show trl vllm`: install the vLLM release the installed trl was tested with (pip install "
                    "'trl[vllm]' resolves one), or upgrade trl to a release that supports this vLLM.") if "trl" in who else
                   "`pip show ms-swift vllm`: install the vLLM version the ms-swift release lists (README dependency "
                   "table), or upgrade ms-swift.",
                   "Pass boolean engine options explicitly instead of leaving them unset (e.g. --enforce_eager false on "
                   "trl vllm-serve)." if "trl" in who else "Check the vllm_* flags you pass against this vLLM release."]
            if vv:
                fix.insert(0, f"vLLM {vv} is installed.")
            return [self.make(message=msg, fix=fix + [fix_tail], evidence=ev, seq=line.seq, ranks=_r(line))]
        return []


# vLLM V1's sampler warm-up (v1/worker/gpu_model_runner.py _dummy_sampler_run, from profile_run) and its top-k/top-p
# op, which takes FlashInfer's sampling kernels when flashinfer is installed (v1/sample/ops/topk_topp_sampler.py,
# VLLM_USE_FLASHINFER_SAMPLER in vllm/envs.py)
_SAMPLER_FUNCS = frozenset({"_dummy_sampler_run"})
_FLASHINFER = lazyre.compile(r"(?i)flashinfer")


def _flashinfer_sampler(fr: Frame, frames: tuple[Frame, ...], ctx: RunState) -> bool:
    """The cut stack is in the sampler warm-up and the log names FlashInfer (a frame, a title, an error line)."""
    if fr.func not in _SAMPLER_FUNCS and not any("topk_topp_sampler" in x.path for x in frames):
        return False
    return any("flashinfer" in x.path for x in frames) or any(
        _FLASHINFER.search(t.raw) for tail in ctx.tails.values() for t in tail)


# frameworks whose trainer builds a vLLM engine in its own processes (colocated, or in-process in trl <= 0.16)
_TRAINER_FRAMEWORKS = frozenset({"ms-swift", "trl", "unsloth", "verifiers", "verl", "easyr1", "openrlhf"})


def trainer_evident(ctx: RunState, f: Facts) -> bool:
    """Whether the log shows a trainer (its kind, or a trainer framework): with no trainer configuration read at all,
    an engine construction is as likely a vLLM server's or an offline script's (doctor/swift/trainer_kind.py: a
    server job has none)."""
    if f.server_launch is not None and f.trainer_launch is None:
        return False  # only a server was launched (trl vllm-serve, swift rollout / deploy)
    kind = ctx.trainer_kind().kind
    if kind is not None:
        return kind not in ("serve", "infer")
    fw, _ver, _recipe, source = ctx.framework()
    return source != "assumed" and fw in _TRAINER_FRAMEWORKS


def _r(line) -> tuple[int, ...]:
    return (line.rank,) if line.rank is not None else ()
