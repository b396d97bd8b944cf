"""GD802: files of a checkpoint that cannot be loaded (cut, empty, LFS pointers, missing shards, bad headers)."""
from __future__ import annotations

import math
import posixpath
import re

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding, Severity
from ...sources.checkpoint import SHARD_RE, CheckpointFacts
from ._base import CkptRule, ev_at
from ._facts import expected_full_params, fmt_bytes, fmt_params, kind, newest_per_run


# ------------------------------------------------------------------------------------------ GD802
def corrupt_reasons(f: CheckpointFacts) -> list[tuple[str, str, str]]:
    """(file, why it is broken, what to do) for every problem in one checkpoint."""
    out: list[tuple[str, str, str]] = []
    for name, ff in sorted(f.files.items()):
        if ff.dangling:
            out.append((name, f"is a symlink to {ff.link}, which does not exist", "copy the real file in its place"))
        elif ff.lfs is not None:
            real = ff.lfs.get("size")
            out.append((name, f"is a git-LFS pointer ({ff.size} bytes)" + (f" to a {fmt_bytes(int(real))} file"
                        if real and real.isdigit() else "") + ", not the file itself",
                        f"git lfs pull --include \"{posixpath.join(f.path, name)}\""))
        elif ff.size == 0 and name.endswith((".safetensors", ".bin", ".pt", ".pth", ".json", "latest")):
            out.append((name, "is empty (0 bytes)", "copy it again from the machine that trained, or re-save"))
        elif ff.zip_ok is False:
            out.append((name, f"is cut short: {fmt_bytes(ff.size)} with no zip end record (torch.save did not "
                              f"finish: disk full, or the copy stopped)", "copy it again or re-save the checkpoint"))
    listed = {n for n, _, _ in out}
    for name, h in sorted(f.headers.items()):
        if name in listed or h.ok:
            continue
        why = h.problems[0] if h.problems else "the safetensors parser rejects it"
        lib = f" (safetensors: {h.lib_error})" if h.lib_error else ""
        out.append((name, "is broken: " + why + lib, "copy it again from the source; a loader will fail on it"))
    for name, j in sorted(f.jsons.items()):
        if j.error and name not in listed:
            out.append((name, "is broken: " + j.error, "copy it again" + (" (trainer_state.json is needed to resume)"
                                                          if name == "trainer_state.json" else "")))
    out += _index_reasons(f)
    out += _adapter_reasons(f)
    if f.latest and re.match(r"global_step\d+$", f.latest) and f.latest not in f.deepspeed_tags:
        out.append(("latest", f"names DeepSpeed tag {f.latest!r}, but there is no {f.latest}/ folder",
                    "copy the folder, or resume with --resume_only_model (weights only)"))
    n_full, src = expected_full_params(f)
    stored = sum(h.numel for n, h in f.headers.items() if n in f.weight_files() and h.ok)
    if n_full and stored and stored < 0.9 * n_full and not any(n.startswith("model") for n, _, _ in out):
        out.append((f.weight_files()[0], f"the weights hold {fmt_params(stored)} params, but the architecture in "
                    f"{src} has {fmt_params(n_full)}", "some weights are missing: re-save or copy every shard"))
    return out


_EXTRA_SHARD = "not named by"


def _index_reasons(f: CheckpointFacts) -> list[tuple[str, str, str]]:
    out = []
    shards = {n: SHARD_RE.match(n) for n in f.top() if SHARD_RE.match(n)}
    for idx_name, stem in (("model.safetensors.index.json", "model"), ("pytorch_model.bin.index.json", "pytorch_model")):
        mine = {n: m for n, m in shards.items() if m.group("stem") == stem}
        idx = f.json(idx_name)
        if idx_name not in f.jsons:
            if mine:
                n_expect = int(next(iter(mine.values())).group("n"))
                out.append((sorted(mine)[0], f"{len(mine)} shard(s) of {n_expect} but no {idx_name}: loaders find "
                            f"shards through the index", f"copy {idx_name} from the source"))
            continue
        if not isinstance(idx, dict) or not isinstance(idx.get("weight_map"), dict):
            if idx is not None:
                out.append((idx_name, "has no weight_map", f"copy {idx_name} again"))
            continue
        wm: dict[str, str] = idx["weight_map"]
        if not all(isinstance(v, str) for v in wm.values()):  # a list or a number where a shard's name belongs
            out.append((idx_name, "has a weight_map whose values are not all shard file names", f"copy {idx_name} again"))
            continue
        referenced = set(wm.values())
        missing = sorted(s for s in referenced if s not in f.files)
        if missing:
            out.append((idx_name, f"names {len(missing)} shard(s) that are not here: {', '.join(missing[:4])}"
                        + (" ..." if len(missing) > 4 else ""), "copy the missing shard(s)"))
        extra = sorted(n for n in mine if n not in referenced)
        if extra:
            out.append((extra[0], f"{len(extra)} shard(s) {_EXTRA_SHARD} {idx_name} ({', '.join(extra[:3])}): left "
                        f"from another save? Loaders never open them", "delete them or copy the matching index"))
        counts = {int(m.group("n")) for n, m in mine.items()}
        for n_of in counts:
            have = {int(m.group("i")) for m in mine.values() if int(m.group("n")) == n_of}
            gone = sorted(set(range(1, n_of + 1)) - have)
            if gone and not missing:
                out.append((idx_name, f"shard(s) {', '.join(f'{i:05d}' for i in gone[:4])} of {n_of:05d} are "
                            f"missing", "copy the missing shard(s)"))
        # tensors the index maps to a shard whose header lacks them
        absent = 0
        example = ""
        total = 0
        complete = True
        by_shard: dict[str, set[str]] = {}
        for t, s in wm.items():
            by_shard.setdefault(s, set()).add(t)
        for s, names in by_shard.items():
            h = f.headers.get(s)
            if h is None or not h.ok:
                complete = False
                continue
            have_t = {t.name: t for t in h.tensors}
            for t in names:
                if t not in have_t:
                    absent += 1
                    example = example or f"{t} (in {s})"
                else:
                    total += have_t[t].end - have_t[t].begin
        if absent:
            out.append((idx_name, f"maps {absent} tensor(s) to shards that do not hold them, e.g. {example}",
                        "the index and the shards come from different saves: copy both again"))
        meta = idx.get("metadata") if isinstance(idx.get("metadata"), dict) else {}
        ts = meta.get("total_size")
        if complete and not absent and isinstance(ts, (int, float)) and math.isfinite(ts) and int(ts) != total:
            out.append((idx_name, f"metadata.total_size is {int(ts):,} bytes but the shards' headers add up to "
                        f"{total:,}", "the index and the shards come from different saves: copy both again"))
    return out


_LORA_KEY = lazyre.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<ab>[AB])(?:\.[^.]+)?\.weight$")


def _adapter_reasons(f: CheckpointFacts) -> list[tuple[str, str, str]]:
    cfg = f.json("adapter_config.json")
    files = [n for n in f.adapter_files() if n.endswith(".safetensors")]
    if not files or not isinstance(cfg, dict):
        if files and "adapter_config.json" not in f.files:
            return [(files[0], "an adapter without adapter_config.json: peft cannot load it",
                     "copy adapter_config.json from the run")]
        return []
    h = f.headers.get(files[0])
    if h is None or not h.ok or str(cfg.get("peft_type", "LORA")).upper() != "LORA":
        return []
    r = cfg.get("r")
    ranks = {int(r)} if isinstance(r, int) else set()
    for pat in ("rank_pattern", "alpha_pattern"):
        if pat == "rank_pattern" and isinstance(cfg.get(pat), dict):
            ranks |= {int(v) for v in cfg[pat].values() if isinstance(v, int)}
    targets = cfg.get("target_modules")
    out = []
    lora = [(m, t) for t in h.tensors if (m := _LORA_KEY.match(t.name))]
    if not lora:
        return [(files[0], f"does not match adapter_config.json: it holds {len(h.tensors)} tensor(s) and none is a LoRA weight (lora_A/lora_B) although "
                 f"adapter_config.json says peft_type LORA", "the adapter file is from another run: copy it again")]
    bad_rank = [(m, t) for m, t in lora if ranks and t.shape and
                (t.shape[0] if m.group("ab") == "A" else t.shape[-1]) not in ranks]
    if bad_rank:
        m, t = bad_rank[0]
        out.append((files[0], f"does not match adapter_config.json: {len(bad_rank)} LoRA tensor(s) have rank {t.shape[0] if m.group('ab') == 'A' else t.shape[-1]}"
                    f" but adapter_config.json says r={r}, e.g. {t.name} {list(t.shape)}",
                    "adapter_config.json and the weights come from different runs: copy both from the same checkpoint"))
    if isinstance(targets, list) and targets:
        tset = {str(x) for x in targets}
        off = sorted({m.group("module") for m, _ in lora if m.group("module").rsplit(".", 1)[-1] not in tset
                      and m.group("module") not in tset})
        if off:
            out.append((files[0], f"does not match adapter_config.json: it has LoRA weights on {len(off)} module(s) not in target_modules {sorted(tset)}, "
                        f"e.g. {off[0]}", "adapter_config.json and the weights come from different runs"))
    return out


def no_weights(f: CheckpointFacts) -> str | None:
    """What a checkpoint holds instead of weights, when it holds none (no model, adapter or DeepSpeed files)."""
    if kind(f) is not None:
        return None
    names = sorted(n for n in f.top() if not n.startswith("."))
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"holds no model weights: no model*.safetensors, pytorch_model*.bin, adapter_model.* or global_stepN/, "
            f"only {shown or 'nothing'} ({fmt_bytes(f.total_bytes())})")


_WANT = {"full": "full weights", "lora": "a LoRA adapter"}


def cut_by_signal(f: CheckpointFacts, ended_by: tuple[str, float] | None) -> str | None:
    """Why a checkpoint folder is incomplete when the command that wrote it was killed by a signal (``ended_by``,
    from watch: the signal's name and the seconds since the launch) before the folder held trainer_state.json, which
    the trainer writes last (transformers 4.x-5.x Trainer._save_checkpoint: weights, optimizer, scheduler, RNG state,
    then trainer_state.json); None otherwise."""
    if not ended_by or "trainer_state.json" in f.files:
        return None
    name, secs = ended_by
    from ..hang._progress import SIGNAL_SENDERS
    sender = SIGNAL_SENDERS.get(name, "the OOM killer, or a scheduler's or a person's kill -9" if name == "SIGKILL"
                                else "another process")
    return (f"The run was killed by {name} {secs:.0f} s after its launch while this checkpoint was being saved (it has "
            f"no trainer_state.json, which the trainer writes last): {name} comes from {sender}.")


class Corrupt(CkptRule):
    def finish(self, ctx: RunState) -> list[Finding]:
        out = []
        newest = {id(g[-1]) for g in newest_per_run(self.inputs)}
        ended_by = ctx.facts.get("ended_by_signal")
        for inp in self.inputs:
            f = inp.facts
            reasons = corrupt_reasons(f)
            cut = cut_by_signal(f, ended_by)
            if cut and not any(n == "trainer_state.json" for n, _, _ in reasons):
                # a save stopped between two files leaves none of them cut, and still no state to resume from
                reasons.append(("trainer_state.json", "is missing: the save stopped before its last file",
                                "resume from the checkpoint before this one"))
            empty = no_weights(f) if inp.gate or inp.expect else None
            if empty and not reasons:
                out.append(self._empty(inp.facts, empty, inp.expect))
                continue
            if empty:
                reasons.append((f.name, empty, "copy the weight files from the machine that trained, or re-save"))
            if id(inp) in newest:  # run-level links, reported once per run
                for link, (target, exists) in sorted(f.run_links.items()):
                    if not exists:
                        reasons.append((f"../{link}", f"(in the run directory) points to {target}, which does not "
                                        f"exist", f"ln -sfn {f.name} {posixpath.join(f.run_dir or '..', link)}"))
            if not reasons:
                continue
            first = reasons[0]
            more = f" (and {len(reasons) - 1} more problem(s))" if len(reasons) > 1 else ""
            # shards the index does not name are never opened by loaders: a leftover, not a broken checkpoint
            soft = all(_EXTRA_SHARD in why for _, why, _ in reasons)
            msg = (f"{f.path} has files its index does not use: {first[0]} {first[1]}{more}." if soft else
                   f"{f.path} cannot be loaded as saved: {first[0]} {first[1]}{more}.")
            fix = list(dict.fromkeys(f"{name}: {todo}" for name, _, todo in reasons))[:6]
            resume = any(n in ("trainer_state.json", "optimizer.pt") or n.startswith("global_step")
                         for n, _, _ in reasons)
            if cut:
                msg += " " + cut
                # transformers' get_last_checkpoint (trainer_utils.py) takes the highest-numbered checkpoint-N folder,
                # complete or not: a resume that names no folder would pick this one
                fix = [f"Resume from the last checkpoint saved before this one, named explicitly, and move {f.name} "
                       "out of the output folder first: a resume that finds the newest checkpoint by itself "
                       f"picks the highest-numbered folder, {f.name}."] + fix
            elif resume:
                fix.append("To resume anyway from the weights alone: --resume_from_checkpoint <ckpt> "
                           "--resume_only_model true (optimizer state is lost).")
            ev = [ev_at(f, name, f"{name}: {why}") for name, why, _ in reasons[:6]]
            out.append(self.make(message=msg, fix=fix, evidence=ev, severity=Severity.warning if soft else None))
        return out

    def _empty(self, f: CheckpointFacts, what: str, expect: str | None) -> Finding:
        """A checkpoint without any weight file: an error when --expect asked for weights, else a warning (a folder
        may hold the trainer state alone on purpose, e.g. weights pushed elsewhere)."""
        msg = f"{f.path} {what}."
        if expect in _WANT:
            msg += f" --expect {expect} asks for {_WANT[expect]}: nothing here can be loaded as a model."
        fix = ["The save stopped before the weights were written, or only part of the folder was copied: check free "
               "disk space where it was saved, copy the weight files from the machine that trained, or re-save.",
               "--resume_from_checkpoint cannot use it as it is: transformers loads the model weights (or the adapter) "
               "from the checkpoint as well as optimizer.pt."]
        ev = [ev_at(f, "", f"{f.name}: {', '.join(sorted(f.top())[:6]) or 'empty'}")]
        return self.make(message=msg, fix=fix, evidence=ev,
                         severity=Severity.error if expect in _WANT else Severity.warning)
