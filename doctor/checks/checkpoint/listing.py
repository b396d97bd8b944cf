"""GD808: a checkpoint folder's listing pasted into a log (``ls -l``, ``du -sh``, a name/size table), judged by its
own numbers: full weights beside a LoRA adapter, optimizer or DeepSpeed states beside the weights, checkpoints that
grow from save to save. The listing is parsed by doctor/sources/listing.py; nothing here reads a file."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...sources.listing import Entry, blocks
from ._facts import fmt_bytes

_ADAPTER = lazyre.compile(r"^adapter_model(?:-\d{5}-of-\d{5})?\.(?:safetensors|bin)$")
# full weights: transformers' model*.safetensors / pytorch_model*.bin, accelerate FSDP's pytorch_model_fsdp*.bin,
# consolidated / merged copies, and DeepSpeed's module states (runtime/engine.py _save_checkpoint writes
# mp_rank_NN_model_states.pt: the whole module under ZeRO-0/1/2, beside the bf16_zero_pp_rank_*_optim_states.pt shards)
_WEIGHTS = lazyre.compile(r"^(?:model|pytorch_model(?:_fsdp)?|consolidated|merged_model)[\w.\-]*\.(?:safetensors|bin|pt|pth)$|"
                      r"^mp_rank_\d+_model_states\.pt$")
_OPTIM = lazyre.compile(r"^optimizer(?:_\d+)?\.(?:pt|bin)$|optim_states")
_DS_TAG = lazyre.compile(r"^global_step\d+$")
_CKPT_DIR = lazyre.compile(r"^checkpoint-(\d+)$")
_SAVE_ONLY_MODEL = ("save_only_model (ms-swift --save_only_model true; transformers/trl save_only_model=True) drops the "
                    "optimizer, scheduler and DeepSpeed states from each save; such checkpoints cannot resume the "
                    "optimizer, so keep the last one full if you need to resume.")
GROWTH = 1.3      # newest / oldest checkpoint size that counts as growing
MIN_FULL = 1 << 30  # weights of at least 1 GiB: a model, not a head or an embedding file


def size_of(e: Entry) -> str:
    """The size as the reader should see it: bytes in decimal units, a human size (``15G``) as the listing printed it."""
    if e.size is None:
        return "(folder)"
    return fmt_bytes(e.size) if e.printed.replace(" ", "").replace(",", "").isdigit() else e.printed


def _ev(path: str, e: Entry) -> Evidence:
    return Evidence(path, e.line, f"{e.name} {size_of(e)}")


def judge(rows: list[Entry], path: str) -> tuple[str, list[str], list[Evidence]] | None:
    """(message, fix, evidence) for one listing block, or None when its numbers show nothing wrong."""
    sized = [e for e in rows if e.size is not None]
    # by name (a listing without sizes still tells what each save holds), then those whose size was printed
    n_adapters = [e for e in rows if _ADAPTER.match(e.name)]
    n_weights = [e for e in rows if not e.is_dir and _WEIGHTS.match(e.name)]
    n_optim = [e for e in rows if _OPTIM.search(e.name)]
    adapters, weights, optim = ([e for e in es if e.size is not None] for es in (n_adapters, n_weights, n_optim))
    ds_tags = [e for e in rows if _DS_TAG.match(e.name)]
    ckpts = sorted(((int(m.group(1)), e) for e in sized for m in [_CKPT_DIR.match(e.name)] if m),
                   key=lambda se: se[0])
    w_total = sum(e.size or 0 for e in weights)
    a_total = sum(e.size or 0 for e in adapters)
    causes: list[str] = []
    fix: list[str] = []
    ev: list[Evidence] = []
    if adapters and weights and w_total >= 10 * max(a_total, 1):
        causes.append(f"full model weights ({', '.join(e.name for e in weights[:3])}, {fmt_bytes(w_total)}) are "
                      f"saved beside the LoRA adapter ({fmt_bytes(a_total)}), {w_total / max(a_total, 1):.0f}x its "
                      f"size: every checkpoint carries a copy of the frozen base model")
        fix.append("Save only the adapter: with PEFT, save_pretrained of the PeftModel writes adapter_config.json and "
                   "adapter_model.*; under FSDP, a FULL_STATE_DICT save writes the whole wrapped model as well, so use "
                   "a sharded state dict or save the adapter yourself.")
        ev += [_ev(path, e) for e in sorted(weights, key=lambda e: -(e.size or 0))[:2]] + [_ev(path, adapters[0])]
    elif weights and w_total >= MIN_FULL and (optim or ds_tags):
        o_total = sum(e.size or 0 for e in optim)
        o_shown = size_of(optim[0]) if len(optim) == 1 else fmt_bytes(o_total)   # one file: its size as printed
        w_shown = size_of(weights[0]) if len(weights) == 1 else fmt_bytes(w_total)
        states = (f"optimizer states {o_shown} ({o_total / w_total:.1f}x the weights)" if o_total else
                  f"DeepSpeed states in {ds_tags[0].name}/ (their size is not in the listing; mixed-precision Adam "
                  f"keeps 12 bytes per parameter, 6x bf16 weights)")
        causes.append(f"the checkpoint holds the full model weights ({w_shown}) and {states}: each save "
                      f"writes both")
        fix.append(_SAVE_ONLY_MODEL)
        if not adapters:
            fix.append("If this was a LoRA run, the checkpoint should hold adapter_model.* (tens to hundreds of MB), "
                       "not the full weights: save the PeftModel, not the base model.")
        ev += [_ev(path, e) for e in weights[:2]] + [_ev(path, (optim or ds_tags)[0])]
    if not causes and not sized:  # names only (`tree` without -h): what each save holds, not its size
        if n_weights and n_adapters:
            causes.append(f"full model weights ({', '.join(e.name for e in n_weights[:3])}) are saved beside the LoRA "
                          f"adapter ({n_adapters[0].name}); the listing has no sizes, but every checkpoint then carries "
                          f"a copy of the base model")
            fix.append("Save only the adapter: with PEFT, save_pretrained of the PeftModel writes adapter_config.json "
                       "and adapter_model.*; check that the trainer saves the PeftModel, not the merged or base model.")
            ev += [_ev(path, n_weights[0]), _ev(path, n_adapters[0])]
        elif n_weights and (n_optim or ds_tags):
            states = ", ".join(e.name for e in (n_optim or ds_tags)[:2])
            causes.append(f"each checkpoint holds the full model weights ({', '.join(e.name for e in n_weights[:2])}) "
                          f"and the optimizer states ({states}); the listing has no sizes, but mixed-precision Adam "
                          f"keeps 12 bytes per parameter, about 6x bf16 weights")
            fix.append(_SAVE_ONLY_MODEL)
            ev += [_ev(path, n_weights[0]), _ev(path, (n_optim or ds_tags)[0])]
    if len(ckpts) >= 2:
        first, last = ckpts[0][1], ckpts[-1][1]
        if (last.size or 0) >= GROWTH * (first.size or 1):
            causes.append(f"checkpoints grow from {size_of(first)} ({first.name}) to "
                          f"{size_of(last)} ({last.name}): something is added at each save (optimizer "
                          f"states after the first step, extra weight copies, or files written into the folder)")
            fix.append(f"Compare the files of {first.name} and {last.name} (`du -ah {first.name} {last.name} | sort "
                       f"-h | tail`): the file that grew is the cause.")
            ev += [_ev(path, first), _ev(path, last)]
    if not causes:
        return None
    fix.append("Keep fewer checkpoints on disk meanwhile: save_total_limit (ms-swift --save_total_limit 2; "
               "transformers/trl save_total_limit=2).")
    return "A pasted checkpoint listing shows " + "; ".join(causes) + ".", fix, ev


class CheckpointListing(Rule):
    kinds: frozenset[type] = frozenset()  # reads the last lines of each log at the end (RunState.tails)

    def finish(self, ctx: RunState) -> list[Finding]:
        out = []
        for path, rows in listing_blocks(ctx):
            found = judge(rows, path)
            if found is not None:
                msg, fix, ev = found
                out.append(self.make(message=msg, fix=fix, evidence=ev))
        return out


def listing_blocks(ctx: RunState) -> list[tuple[str, list[Entry]]]:
    """(log path, entries) of each listing block pasted in the last lines of each log."""
    return [(path, rows) for path, tail in ctx.tails.items()
            for rows in blocks([(ln.where.line, ln.text) for ln in tail])]


TINY_ADAPTER = 64 << 10   # a LoRA adapter of any real model holds megabytes; one of a few KB holds empty tensors


def empty_adapter(rows: list[Entry], path: str) -> tuple[str, list[Evidence]] | None:
    """(message, evidence) when a listing block shows an adapter file of a few KB beside DeepSpeed's states of GBs:
    the adapter was saved from ZeRO-3 partitions that were not gathered."""
    tiny = [e for e in rows if _ADAPTER.match(e.name) and e.size is not None and e.size < TINY_ADAPTER]
    shards = [e for e in rows if _DS_TAG.match(e.name) and (e.size or 0) >= MIN_FULL]
    if not tiny or not shards:
        return None
    a, g = tiny[0], shards[0]
    msg = (f"The pasted listing shows {a.name} of {size_of(a)} beside the DeepSpeed states {g.name}/ of {size_of(g)}: "
           f"a LoRA adapter of a real model holds megabytes, and one of a few KB was written from ZeRO-3 partitions "
           f"that were not gathered, so its tensors are empty. What was trained is in {g.name}/.")
    return msg, [_ev(path, a), _ev(path, g)]


class EmptyAdapterListing(Rule):
    kinds: frozenset[type] = frozenset()  # reads the last lines of each log at the end (RunState.tails)

    def finish(self, ctx: RunState) -> list[Finding]:
        found = [f for path, rows in listing_blocks(ctx) if (f := empty_adapter(rows, path)) is not None]
        return [self.make(message=msg, evidence=ev) for msg, ev in found]
