"""GD809's reading of a folder transformers found no weights in. ``from_pretrained`` looks for one weights file or
the index of sharded ones (model.safetensors.index.json, pytorch_model.bin.index.json: modeling_utils.py
``_get_resolved_checkpoint_files``, earlier ``from_pretrained`` itself) and raises "does not appear to have a file
named pytorch_model.bin, model.safetensors, ..." when neither is there. An adapter checkpoint is the rule's usual
reading; the run's words about shards or an index (a merged save written as shards without its index) make it a
save that lost its index. A message whose path the paste dropped keeps the reading without naming a folder."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence
from ...rules import Diagnosis, Hit

# the index's file name, a shard's ("model-00001-of-00002.safetensors"), a person's "sharded"; not the shard count of
# "Loading checkpoint shards", which every sharded load prints (the base model's too)
_SHARDED = lazyre.compile(r"\.index\.json|-\d{5}-of-\d{5}\.|\bsharded\b|分片")


def weights_layout_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    hit = hits[0]
    folder = hit.groups.get("dir") or ""
    where = f"`{folder}`" if folder else "the folder it was given (the paste does not show its path)"
    if hit.groups.get("file") != "config.json":
        said = next((line for tail in ctx.tails.values() for line in tail
                     if line.seq != hit.seq and _SHARDED.search(line.text)), None)
        if said is not None:
            words = " ".join(said.text.split())[:160]
            msg = (f"transformers found neither a single weights file nor the index of sharded ones in {where}, and "
                   f"the run's words speak of shards or their index (line {said.where.line}: `{words}`): a sharded "
                   f"save needs its index file (model.safetensors.index.json, or pytorch_model.bin.index.json), "
                   f"which says which tensor is in which shard; without it from_pretrained looks for one file and "
                   f"finds none.")
            fix = ("Put the index file beside the shards: copy model.safetensors.index.json from the model the shards "
                   "were saved from (the same architecture and shard layout), or save again with save_pretrained "
                   "(which writes the index with every sharded save); `ls` the folder to see every shard the index "
                   "names.",)
            return Diagnosis(message=msg, fix=fix, category="checkpoint-corrupt",
                             evidence=(Evidence(said.where.path, said.where.line, said.raw),),
                             title="Sharded weights without their index file were loaded as a model",
                             verify="from_pretrained lists the shards it loads (Loading checkpoint shards: N/N)")
    if hit.groups.get("found"):
        return _no_weights(where, folder)
    if folder:
        return Diagnosis()
    msg = ("transformers was asked to load a full model from a folder (the paste does not show its path) that has no "
           "usable config.json or weights: a LoRA/adapter checkpoint holds adapter_config.json and adapter_model.* "
           "only, not the base model's config and weights.")
    fix = ("`ls` the folder the command loads: with adapter_config.json and adapter_model.* only, load the base model "
           "and put the adapter on it (PEFT `PeftModel.from_pretrained(base, DIR)`; ms-swift `--model BASE --adapters "
           "DIR`), or merge it once and load the merged folder; a folder with neither is a wrong path.",)
    return Diagnosis(message=msg, fix=fix)


def _no_weights(where: str, folder: str) -> Diagnosis:
    """"Error no file named ... found in directory DIR": from_pretrained got past the model's config (usually read from
    the same folder, unless a config was passed in) and found no weights: not the adapter folder of the rule's usual
    reading, which fails on its config."""
    path = folder or "DIR"
    msg = (f"transformers got past the model's config and found no weights there, in {where}: neither one weights file "
           f"(model.safetensors, pytorch_model.bin) nor the index of sharded ones. Folders like this are a checkpoint "
           f"saved under DeepSpeed ZeRO-3 without gathering the weights (only global_step*/ with the ZeRO shards), "
           f"sharded weights without their index file, an adapter checkpoint beside a copied config, or a copy or "
           f"download that stopped before the weights.")
    fix = (f"`ls {path}`: with global_step*/ only, build the weights with DeepSpeed's zero_to_fp32.py (saved in the "
           f"checkpoint folder; `python zero_to_fp32.py --help` gives your release's arguments) and save with "
           f"stage3_gather_16bit_weights_on_model_save true from then on; with shards but no *.index.json, put the "
           f"index of the model they were saved from beside them; with adapter_model.* only, load the base model "
           f"and put the adapter on it; with none of these, copy or download the weights again.",)
    return Diagnosis(message=msg, fix=fix, category="checkpoint-corrupt",
                     title="A model folder holds no weights file that transformers can load",
                     verify="from_pretrained loads the weights (Loading checkpoint shards: N/N, or no missing-file "
                            "error)")
