"""GD210, GD234: tensors on the wrong device, outside vLLM's own code (GD210) or inside it (GD234, a vLLM release
that does not match the trainer's vLLM integration).

Fixes name the flags of the version at hand: ``vllm_device`` exists only in ms-swift 3.1.1-3.5 and
trl 0.14-0.15 (deprecated in trl 0.16); ms-swift >= 3.5 and trl >= 0.18 place vLLM with
``vllm_mode colocate|server``; ``vllm_tensor_parallel_size`` must divide the world size.
"""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding
from ...rules import MAX_EVIDENCE, Diagnosis, Hit, PatternRule, fold
from ...sources.swiftconfig import RunConfig
from ..fallback.exceptions import describe_frame
from ..memory._facts import facts_of

_DEVICES = (
    lazyre.compile(r"found at least two devices, (?P<a>[\w:]+) and (?P<b>[\w:]+)"),
    lazyre.compile(r"but got (?P<what>\w+) is on (?P<a>[\w:]+), different from other tensors on (?P<b>[\w:]+)"),
    lazyre.compile(r"Input type \((?P<a>torch\.[\w.]+)\) and weight type \((?P<b>torch\.[\w.]+)\)"),
    lazyre.compile(r"is on (?P<a>CPU|cpu|[\w:]+), but expected it to be on (?P<b>GPU|cuda[:\d]*)"),
)


def _vtuple(v: str | None) -> tuple[int, ...] | None:
    if not v:
        return None
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", v)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


_LOADING = {"load_weights", "weight_loader", "load_model", "_move_model_to_vllm", "_sync_param_to_vllm",
            "_load_state_dict_to_vllm", "update_named_param", "_move_full_model_to_vllm", "_move_adapter_to_vllm"}


def _in_vllm(frames) -> bool:
    """Raised inside vLLM's own model code (generation), not while the trainer loads or syncs weights into it."""
    if any(fr.func in _LOADING for fr in frames):
        return False
    return any("/vllm/" in fr.path or "vllm_ascend/" in fr.path for fr in frames)


def _layout_advice(run: RunConfig) -> str | None:
    """NPROC_PER_NODE smaller than the visible GPUs puts ms-swift in device_map mode (model split over GPUs)."""
    vis = run.visible_gpus()
    nproc = run._env_int("NPROC_PER_NODE")
    if not vis or vis < 2:
        return None
    if nproc is None and run.world_size_seen is None:
        return (f"CUDA_VISIBLE_DEVICES lists {vis} GPUs but NPROC_PER_NODE is not set: a single process then spreads "
                f"the model over all {vis} GPUs (device_map mode). Set NPROC_PER_NODE={vis} to run one rank per GPU.")
    if nproc and vis // nproc >= 2:
        return (f"CUDA_VISIBLE_DEVICES lists {vis} GPUs for NPROC_PER_NODE={nproc}: each process gets {vis // nproc} "
                f"GPUs and ms-swift splits the model over them (device_map mode). Set NPROC_PER_NODE={vis}, or make "
                f"CUDA_VISIBLE_DEVICES list {nproc} GPU{'s' if nproc > 1 else ''}.")
    return None


def _lead(maybe: str, text: str) -> str:
    """Prefix an optional condition; without one, capitalise a sentence that starts with a plain word."""
    if maybe:
        return maybe + text
    return text[:1].upper() + text[1:] if text.split(" ", 1)[0].isalpha() else text


class DeviceMismatch(PatternRule):
    """'Expected all tensors to be on the same device' outside vLLM's own code (GD234 takes those)."""
    idle_silent = True   # fed nothing: no hits (doctor/lazyrules.py)

    def finish(self, ctx: RunState) -> list[Finding]:
        mism = [h for h in self.hits if h.exc is not None and not _in_vllm(h.exc.frames)]
        xformers = any(h.exc is None for h in self.hits)
        if not mism:
            return []
        mism.sort(key=lambda h: h.seq)
        h = mism[0]
        evidence, count, ranks = fold(mism)
        f = facts_of(ctx.run, h.exc.frames)
        text = h.exc.message
        a = b = what = None
        for rx in _DEVICES:
            m = rx.search(text)
            if m:
                a, b, what = m.group("a"), m.group("b"), m.groupdict().get("what")
                break
        where = f", raised at {describe_frame(h.exc.raised_at)}" if h.exc.raised_at else ""
        op = re.search(r"\(when checking argument[^)]*\)", text)
        rk = f" on rank {ranks[0]}" if len(ranks) == 1 else (f" on ranks {', '.join(map(str, ranks))}" if ranks else "")
        msg = f"Tensors on {a} and {b} met in one operation{rk}{where}" if a else f"Tensors on different devices met{rk}{where}"
        if op:
            msg += f" {op.group(0)}"
        msg += "."
        fix: list[str] = []
        # a run that shows neither ms-swift / trl nor vLLM (an inference script, a plain Trainer job) gets no advice
        # about placing a GRPO rollout engine
        vllm_seen = ctx.framework()[0] == "vllm"
        vdev = ctx.run.args.get("vllm_device")
        vdev = vdev if isinstance(vdev, str) and vdev != "auto" else None
        mm = ctx.run.swift_major_minor
        if vdev and vdev in (a, b):
            other = b if vdev == a else a
            msg += (f" {vdev} is the GPU set aside for vLLM (vllm_device: {vdev}) and {other} is this rank's training "
                    f"GPU: the in-process vLLM engine and the training side exchanged tensors across GPUs.")
        if f.framework == "trl" and (vdev or f.use_vllm):
            vv = _vtuple(ctx.run.versions.get("vllm"))
            if vv is None or vv < (0, 7, 2):
                fix.append("Use vLLM >= 0.7.2: trl 0.14-0.15 pin their in-process engine to vllm_device by patching vLLM "
                           "0.7 internals; with another vLLM release part of the engine stays on the training GPU"
                           + (f" (vLLM {ctx.run.versions['vllm']} is installed)." if vv else "."))
            if vdev:
                idx = vdev.split(":")[-1]
                nproc = f.world
                if idx.isdigit() and nproc is not None and nproc <= int(idx):
                    msg += (f" With accelerate --num_processes {nproc} the ranks train on cuda:0..cuda:{nproc - 1}, so "
                            f"{vdev} is vLLM's alone: the engine itself placed a tensor on the wrong GPU, which points "
                            f"at the vLLM release.")
                elif idx.isdigit():
                    fix.append(f"Keep {vdev} out of training: accelerate --num_processes must be at most {idx} so "
                               f"that ranks use cuda:0..cuda:{max(int(idx) - 1, 0)} only.")
                fix.append(f"vllm_device was deprecated in trl 0.16 and removed in 0.18: with a newer trl run "
                           f"`CUDA_VISIBLE_DEVICES={idx} trl vllm-serve --model <model>` and train on the other GPUs "
                           f"with use_vllm: true and vllm_mode: server.")
        elif f.framework == "swift" and (vdev or f.use_vllm or (f.use_vllm is None and (f.known or vllm_seen))):
            maybe = "" if (vdev or f.use_vllm) else "If this run generates with vLLM (use_vllm is not in the log), "
            if mm is not None and mm >= (3, 6):
                if vdev:
                    fix.append(f"vllm_device was removed in ms-swift 3.6 (this is {ctx.run.swift_version}); drop it.")
                fix.append(_lead(maybe, "place vLLM with --vllm_mode colocate (each rank runs its own engine on its own GPU) or "
                           "--vllm_mode server with `CUDA_VISIBLE_DEVICES=<spare GPU> swift rollout --model <model>` and "
                           "--vllm_server_host/--vllm_server_port on the trainer."))
            elif mm is not None and mm < (3, 5):
                fix.append(_lead(maybe, "ms-swift 3.1.1-3.4 put vLLM on vllm_device: keep it outside the training GPUs "
                           "(NPROC_PER_NODE = visible GPUs minus the vLLM ones), or upgrade to ms-swift >= 3.5 and use "
                           "--vllm_mode colocate / server."))
            else:
                fix.append(_lead(maybe, "on ms-swift >= 3.5 place vLLM with --vllm_mode colocate or --vllm_mode server (swift rollout "
                           "on its own GPUs); vllm_device exists only in 3.1.1-3.5."))
            vv = _vtuple(ctx.run.versions.get("vllm"))
            if vv is None or vv < (0, 7, 2):
                fix.append(_lead(maybe, "use vLLM >= 0.7.2 (older releases mis-place the engine in multi-GPU GRPO runs)."))
        lay = _layout_advice(ctx.run)
        if lay:
            fix.insert(0, lay)
        if a and b and ("cpu" in (a.lower(), b.lower()) or "FloatTensor" in (a + b) and ("cuda" in a) != ("cuda" in b)):
            off = [x for x, v in (("offload_model", f.offload_model), ("offload_optimizer", f.offload_optimizer)) if v]
            fix.append("One side is on the CPU: a module or buffer was left on (or offloaded to) the CPU"
                       + (f"; this run sets {', '.join('--' + o + ' true' for o in off)}, whose reload can miss "
                          "modules: retry without it to confirm." if off else
                          "; check device_map / CPU offload settings and custom code that creates tensors."))
        if xformers:
            if f.framework == "swift":
                fix.append("--attn_impl flash_attn, and VLLM_ATTENTION_BACKEND=FLASH_ATTN for vLLM: the log shows the "
                           "xformers backend, which has caused device mismatches in multi-GPU GRPO runs.")
            else:
                fix.append("Use flash-attention instead of xformers (attn_implementation='flash_attention_2' for the "
                           "model, VLLM_ATTENTION_BACKEND=FLASH_ATTN for vLLM).")
        elif (f.use_vllm or (f.use_vllm is None and (f.known or vllm_seen))) and \
                str(ctx.run.args.get("attn_impl") or "") not in ("flash_attn", "flash_attention_2"):
            fix.append("If the log shows the xformers attention backend, use flash-attn instead "
                       + ("(--attn_impl flash_attn; VLLM_ATTENTION_BACKEND=FLASH_ATTN for vLLM)" if f.framework == "swift"
                          else "(VLLM_ATTENTION_BACKEND=FLASH_ATTN for vLLM)")
                       + ": reported to fix multi-GPU device mismatches in GRPO.")
        plain = not (f.known or vllm_seen or vdev or f.use_vllm)
        if not fix:
            fix = list(self.meta.fix) if not plain else [
                "A model spread over several GPUs (device_map='auto') takes its inputs on the GPU of its first layer: "
                "move the inputs there (`inputs.to(model.device)`), and create new tensors on the device of a tensor "
                "they meet (`torch.zeros(..., device=x.device)`); a module or buffer moved by hand (or left on the "
                "CPU) needs the same device as the rest."]
            # a training loop in the frames (transformers' Trainer, trl's trainers, accelerate): a model split over GPUs
            # by device_map is naive model parallelism, which data-parallel processes cannot share (accelerate refuses
            # it outright: "You can't train a model that has been loaded with `device_map='auto'` in any distributed
            # mode", accelerator.py prepare_model)
            frames = h.exc.frames if h.exc is not None else ()
            if plain and any(w in fr.path.replace("\\", "/") for fr in frames
                             for w in ("transformers/trainer.py", "/trl/trainer/", "accelerate/")):
                fix.insert(0, "In training, a model loaded with device_map='auto' (or any device_map over several GPUs) "
                              "is split across them: under torchrun or accelerate launch each process must hold a "
                              "whole copy on its own GPU (device_map={'': local_rank}, or no device_map); only a single "
                              "process may spread one model over several GPUs.")
            if what:
                fix.insert(0, f"The tensor `{what}` is on {a}; find which module created it there.")
        return [self.make(message=msg, fix=fix, evidence=evidence[:MAX_EVIDENCE], count=count, ranks=ranks,
                          seq=h.seq, verify=("the operation that failed runs without `Expected all tensors to be on "
                                             "the same device`" if plain else None))]


def device_in_vllm_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    hits = [h for h in hits if h.exc is not None and _in_vllm(h.exc.frames)]
    if not hits:
        return None
    h = hits[0]
    f = facts_of(ctx.run, h.exc.frames)
    inner = next((fr for fr in reversed(h.exc.frames) if "/vllm/" in fr.path), h.exc.raised_at)
    cut = not h.exc.message.startswith("Expected all tensors")
    vv = ctx.run.versions.get("vllm")
    msg = (f"{h.exc.type} inside vLLM's own model code ({describe_frame(inner)})"
           + (f": the message is cut after '{h.exc.message}' (in other reports the same frames end in 'Expected all "
              f"tensors to be on the same device')" if cut else ": tensors on different devices")
           + (". If so, the" if cut else ". The") + " in-process vLLM engine was given inputs or weights on another GPU "
           "than its own, which happens when the vLLM release does not match what the trainer's vLLM integration "
           "expects.")
    fix = []
    if vv:
        fix.append(f"vLLM {vv} is installed.")
    if not f.known:
        fix.append("trl 0.14-0.15 generate with an in-process vLLM engine placed on vllm_device through patches written "
                   "for vLLM 0.7.x: use vllm>=0.7.2 with those releases (vLLM 0.6 is not supported); newer trl lists "
                   "its vLLM in the 'vllm' extra (pip install 'trl[vllm]').")
        fix.append("ms-swift: colocate GRPO needs vLLM >= 0.8 from ms-swift 3.5 (GRPO docs) and 0.7.x for 3.1.1-3.4; "
                   "see the README dependency table of your release.")
        fix.append("Or generate without vLLM (use_vllm false) until the versions match.")
    elif f.framework == "trl":
        fix.append("trl 0.14-0.15 generate with an in-process vLLM engine placed on vllm_device through patches written "
                   "for vLLM 0.7.x: use vllm>=0.7.2 with those releases (vLLM 0.6 is not supported).")
        fix.append("Or upgrade trl (>= 0.18) with a vLLM its release supports (pip install 'trl[vllm]') and generate "
                   "with `trl vllm-serve` (vllm_mode server) or vllm_mode colocate.")
        fix.append("Or train without use_vllm until the versions match.")
    else:
        mm = ctx.run.swift_major_minor
        fix.append("Install the vLLM version your ms-swift release supports: in-process (colocate) GRPO needs vLLM >= "
                   "0.8 from ms-swift 3.5 (GRPO docs), 0.7.x for 3.1.1-3.4 (vllm_device); see the README dependency "
                   "table" + (f" of ms-swift {ctx.run.swift_version}." if mm else "."))
        fix.append("Or run vLLM as a separate server (swift rollout + --vllm_mode server, ms-swift >= 3.5).")
    return Diagnosis(message=msg, fix=tuple(fix))
