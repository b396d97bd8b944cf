"""Checkpoint rules (GD801-GD805): adapter saved where full weights were meant (load_args), corrupt files,
bloat, the disk filling up before the run ends, full weights where an adapter was expected.

Each rule sees CHECKPOINT signals (``CkptInput``: the facts of one checkpoint directory) and works on
those facts only: no I/O. swift-notes §2 (load_args, adapter vs full listings) and §3 (checkpoint contents,
save_only_model, save_total_limit, DeepSpeed layout).
"""
from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ..model import CHECKPOINT, Evidence, Finding, Severity
from ..rules import FinishContext, Rule
from ..sources.checkpoint import SHARD_RE, CheckpointFacts
from ..sources.checkpoint import config_dtype
from .ckpt_facts import (CONFIG_TO_ST, DTYPE_WIDTH, CkptInput, base_dtype, expected_full_params, fmt_bytes, fmt_params, intent,
                         kind, major_minor, newest_per_run, parts, run_config, swift_version, tuner_value)


def _ev(f: CheckpointFacts, name: str, text: str) -> Evidence:
    return Evidence(posixpath.join(f.path, name) if name else f.path, 0, text)


class _CkptRule(Rule):
    kinds = frozenset({CHECKPOINT})

    def __init__(self, meta):
        super().__init__(meta)
        self.inputs: list[CkptInput] = []

    def feed(self, kind_: str, payload: Any) -> None:
        if isinstance(payload, CkptInput):
            self.inputs.append(payload)


# ------------------------------------------------------------------------------------------ GD801
class AdapterOnly(_CkptRule):
    """A run meant to train every weight saved a LoRA adapter (load_args force-loaded tuner_type)."""

    def finish(self, ctx: FinishContext) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            adapters = [i for i in group if kind(i.facts) == "adapter"]
            if not adapters:
                continue
            f = adapters[-1].facts
            want, why_want = intent(adapters[-1], ctx.run if ctx.run.cli or ctx.run.args else None)
            args = f.args if isinstance(f.args, dict) else {}
            resolved = tuner_value(args.get("tuner_type") or args.get("train_type"))
            load_args = args.get("load_args") is True
            if want == "lora" or (want is None and not (load_args and resolved == "lora")):
                continue
            severity = Severity.error if want == "full" else Severity.warning
            out.append(self._finding(f, adapters, args, want, why_want, severity, ctx))
        return out

    def _finding(self, f: CheckpointFacts, adapters: list[CkptInput], args: dict[str, Any], want: str | None,
                 why_want: str, severity: Severity, ctx: FinishContext) -> Finding:
        flag = "train_type" if ("train_type" in args and "tuner_type" not in args) else "tuner_type"
        ad_name = f.adapter_files()[0]
        ad_size = f.files[ad_name].size
        h = f.headers.get(ad_name)
        acfg = f.json("adapter_config.json") if isinstance(f.json("adapter_config.json"), dict) else {}
        ad_params = h.numel if h is not None and h.ok else None
        names = ", ".join(i.facts.name for i in adapters)
        detail = ([f"{fmt_params(ad_params)} params"] if ad_params else []) + (
            [f"r={acfg.get('r')}"] if acfg.get("r") else [])
        what = (f"{names} hold{'s' if len(adapters) == 1 else ''} only a LoRA adapter: {ad_name} "
                f"{fmt_bytes(ad_size)}" + (f" ({', '.join(detail)})" if detail else "") + ", and no model*.safetensors")
        n_full, n_src = expected_full_params(f)
        if n_full:
            width = DTYPE_WIDTH.get(base_dtype(f)[0] or "BF16", 2)
            what += f"; full weights would be {fmt_params(n_full)} params, about {fmt_bytes(n_full * width)}"
        ver = swift_version(args)
        mm = major_minor(ver)
        model = args.get("model") if isinstance(args.get("model"), str) else None
        adapters_arg = args.get("adapters")
        adapters_dir = adapters_arg[0] if isinstance(adapters_arg, list) and adapters_arg else (
            adapters_arg if isinstance(adapters_arg, str) and adapters_arg else None)
        src_dir = adapters_dir or model
        src = posixpath.join(src_dir.rstrip("/"), "args.json") if src_dir else "the --model/--adapters args.json"
        if args.get("load_args") is True:
            if mm is not None and mm >= (3, 2):
                why_on = (f"args.json records load_args=true: ms-swift {ver} training loads args only when asked, so "
                          f"the command or its YAML passed --load_args true")
            elif mm is not None:
                why_on = f"ms-swift {ver} training loads args by default (3.0-3.1.x; 3.2 made it opt-in)"
            else:
                why_on = ("args.json records load_args=true (ms-swift 3.0-3.1.x training does this by default; from "
                          "3.2 only an explicit --load_args true does)")
            origin = (" (the LoRA run's args.json, copied into the merged folder by swift export --merge_lora)"
                      if src_dir and src_dir.rstrip("/").endswith("-merged") else
                      " (saved with that adapter by its LoRA run; --adapters is searched before --model)"
                      if adapters_dir else "")
            cause = (f"{why_on}; ms-swift then force-loads {flag} from {src}{origin}, overriding the command line, "
                     f"and the resolved {flag} is {args.get(flag)!s}.")
        elif args:
            cause = (f"args.json records {flag}={args.get(flag)!s} and load_args={json.dumps(args.get('load_args'))}: the "
                     f"command that wrote it did not get --{flag} full (ms-swift's default is lora).")
        else:
            cause = "The checkpoint has no args.json to say why."
        if severity == Severity.error:
            msg = f"The run was meant to train every weight ({why_want}), but {what}. {cause}"
        else:
            msg = (f"{what}. {cause} If the run was meant to be full-parameter, the adapter came from that file, "
                   f"not from the command line (pass --expect full or lora to check-ckpt to decide).")
        fix = []
        if args.get("load_args") is True:
            fix.append("Add --load_args false (or delete `--load_args true` / `load_args: true` from the script or "
                       "YAML)" + (": ms-swift 3.0-3.1.x training loads args.json by default" if mm and mm < (3, 2)
                                  else "") + f", and keep --{flag} full.")
            if src_dir:
                fix.append(f"Or rename {src} so nothing is force-loaded from it (then pass --model_type/--template "
                           f"yourself if they came from it).")
        else:
            fix.append(f"Pass --{flag} full explicitly.")
        if adapters_dir:
            fix.append(f"To train every weight starting from that LoRA: --model <base> --adapters {adapters_dir} "
                       f"--{flag} full --load_args false (ms-swift merges the adapter first).")
        fix.append(f"The LoRA already trained is not lost: swift export --adapters {f.path} --merge_lora true gives "
                   f"full weights of this run.")
        fix.append(f"Check the next checkpoint: grpo-doctor check-ckpt <checkpoint> --expect full (it must hold "
                   f"model.safetensors or model-0000x-of-0000y.safetensors, not {ad_name}).")
        ev = [_ev(i.facts, ad_name, f"{ad_name} {fmt_bytes(i.facts.files[ad_name].size)}; no model*.safetensors")
              for i in adapters[-3:]]
        if args:
            ev.append(_ev(f, "args.json", f'"{flag}": "{args.get(flag)}", "load_args": '
                                          f'{str(args.get("load_args")).lower()}, "model": "{model}"'))
        return self.make(message=msg, fix=fix, evidence=ev, severity=severity, count=len(adapters))


# ------------------------------------------------------------------------------------------ GD805
class FullNotAdapter(_CkptRule):
    """--expect lora (or a LoRA command) but the checkpoint holds full weights."""

    def finish(self, ctx: FinishContext) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            fulls = [i for i in group if kind(i.facts) == "full"]
            if not fulls:
                continue
            want, why_want = intent(fulls[-1], ctx.run if ctx.run.cli or ctx.run.args else None)
            if want != "lora":
                continue
            f = fulls[-1].facts
            p = parts(f)
            args = f.args if isinstance(f.args, dict) else {}
            flag = "train_type" if ("train_type" in args and "tuner_type" not in args) else "tuner_type"
            msg = (f"A LoRA adapter was expected ({why_want}), but {f.name} holds full model weights: "
                   f"{', '.join(f.weight_files())} {fmt_bytes(p.weights)}"
                   + (f" ({fmt_params(p.params)} params)" if p.params else "")
                   + (f"; args.json records {flag}={args.get(flag)}" if args.get(flag) else "") + ".")
            fix = [f"Train with --{flag} lora (the adapter of a 7B model is tens of MB, not GBs).",
                   "If full weights are what you want, run check-ckpt with --expect full."]
            ev = [_ev(f, n, f"{n} {fmt_bytes(f.files[n].size)}") for n in f.weight_files()[:3]]
            out.append(self.make(message=msg, fix=fix, evidence=ev, count=len(fulls)))
        return out


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
        if complete and not absent and isinstance(ts, (int, float)) and int(ts) != total:
            out.append((idx_name, f"metadata.total_size is {int(ts):,} bytes but the shards' headers add up to "
                        f"{total:,}", "the index and the shards come from different saves: copy both again"))
    return out


_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<ab>[AB])(?:\.[^.]+)?\.weight$")


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


class Corrupt(_CkptRule):
    def finish(self, ctx: FinishContext) -> list[Finding]:
        out = []
        newest = {id(g[-1]) for g in newest_per_run(self.inputs)}
        for inp in self.inputs:
            f = inp.facts
            reasons = corrupt_reasons(f)
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
            if resume:
                fix.append("To resume anyway from the weights alone: --resume_from_checkpoint <ckpt> "
                           "--resume_only_model true (optimizer state is lost).")
            ev = [_ev(f, name, f"{name}: {why}") for name, why, _ in reasons[:6]]
            out.append(self.make(message=msg, fix=fix, evidence=ev, severity=Severity.warning if soft else None))
        return out


# ------------------------------------------------------------------------------------------ GD803
class Bloat(_CkptRule):
    """What a full checkpoint is made of, and what each fix saves (seeds: 15 GB model, 43 GB checkpoints)."""

    def finish(self, ctx: FinishContext) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            full = [i for i in group if kind(i.facts) in ("full", "deepspeed")]
            if not full:
                continue
            f = full[-1].facts
            rc = run_config(f, ctx.run if (ctx.run.args or ctx.run.cli) else None)
            p = parts(f)
            if p.weights == 0 and p.ds_model == 0:
                continue
            w = p.weights or p.ds_model
            lines = [f"weights {fmt_bytes(p.weights)}" + (f" ({p.weight_dtype}, {fmt_params(p.params)} params)"
                                                          if p.weight_dtype else "")]
            if p.optimizer:
                lines.append(f"optimizer states {fmt_bytes(p.optimizer)} ({p.optimizer / w:.1f}x the weights)")
            if p.ds_model:
                lines.append(f"DeepSpeed model states {fmt_bytes(p.ds_model)} ({', '.join(sorted(f.deepspeed_tags))})")
            lines.append(f"other {fmt_bytes(p.other)}")
            fixes: list[str] = []
            causes = []
            n_ckpt = max(len(f.siblings), 1)
            resumable = p.optimizer + p.ds_model + sum(
                ff.size for n, ff in f.files.items() if n.rsplit("/", 1)[-1].startswith(("rng_state", "scheduler")))
            if p.optimizer + p.ds_model >= 1.5 * w:
                causes.append("optimizer states")
                fixes.append(f"--save_only_model true: drops optimizer, scheduler, RNG and DeepSpeed states, "
                             f"{fmt_bytes(resumable)} per checkpoint ({fmt_bytes(p.total - resumable)} left)"
                             + (f", {fmt_bytes(resumable * n_ckpt)} over the {n_ckpt} checkpoints" if n_ckpt > 1 else "")
                             + "; such checkpoints cannot resume the optimizer (keep the last one full, or use "
                               "--resume_only_model).")
            if p.weight_dtype == "F32" and p.params:
                bdt, bsrc = base_dtype(f)
                cdt = CONFIG_TO_ST.get(config_dtype(f.json("config.json")) or "", None)
                if bdt not in ("BF16", "F16") and cdt in ("BF16", "F16"):
                    bdt, bsrc = cdt, "config.json"
                half = p.weights // 2 + (p.optimizer // 2 if not f.deepspeed_tags else 0)
                saving = (f"--torch_dtype bfloat16 (bf16 weights{' and optimizer moments' if not f.deepspeed_tags else ''})"
                          f": saves {fmt_bytes(half)} per checkpoint"
                          + (" (on CPU add --use_cpu true)" if rc.args.get("use_cpu") is False else ""))
                if bdt in ("BF16", "F16"):
                    causes.append(f"float32 weights from a {bdt} base ({bsrc}; the checkpoint is "
                                  f"{p.total / (p.params * 2):.1f}x the model's {bdt} size)")
                    fixes.append(saving + ".")
                elif causes:
                    fixes.append(saving + ", if the base model is published in bf16.")
            limit = rc.args.get("save_total_limit")
            if n_ckpt > 2 and limit in (None, "None"):
                sizes = sorted(f.siblings.items(), key=lambda kv: int(kv[0].split("-")[-1]))
                old = sum(b for _, b in sizes[:-2])
                causes.append(f"all {n_ckpt} checkpoints kept (save_total_limit unset)")
                fixes.append(f"--save_total_limit 2: keeps the newest two (and the best one with "
                             f"load_best_model_at_end); here it frees {fmt_bytes(old)} "
                             f"({', '.join(n for n, _ in sizes[:-2][:4])}{' ...' if len(sizes) > 6 else ''}).")
            if not causes:
                continue
            ratio = p.total / w if w else 0
            msg = (f"{f.name} takes {fmt_bytes(p.total)}, {ratio:.1f}x its weights: " + "; ".join(lines)
                   + f". Causes: {', '.join(causes)}."
                   + (f" The run directory holds {n_ckpt} checkpoints, {fmt_bytes(sum(f.siblings.values()))} in all."
                      if n_ckpt > 1 else ""))
            ev = [_ev(f, n, f"{n} {fmt_bytes(ff.size)}") for n, ff in
                  sorted(f.files.items(), key=lambda kv: -kv[1].size)[:4]]
            out.append(self.make(message=msg, fix=fixes, evidence=ev))
        return out


# ------------------------------------------------------------------------------------------ GD804
def remaining_saves(global_step: int, max_steps: int, save_steps: int) -> int:
    """Saves still to come: every multiple of save_steps after global_step, plus the final step."""
    if max_steps <= global_step or save_steps <= 0:
        return 0
    n = max_steps // save_steps - global_step // save_steps
    if max_steps % save_steps:
        n += 1
    return n


class DiskFull(_CkptRule):
    def finish(self, ctx: FinishContext) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            f = group[-1].facts
            ts = f.json("trainer_state.json")
            if not isinstance(ts, dict) or f.fs_free is None:
                continue
            try:
                g, mx, ss = int(ts.get("global_step") or 0), int(ts.get("max_steps") or 0), int(ts.get("save_steps") or 0)
            except (TypeError, ValueError):
                continue
            saves = remaining_saves(g, mx, ss)
            size = f.total_bytes()
            if saves == 0 or size == 0:
                continue
            rc = run_config(f, ctx.run if (ctx.run.args or ctx.run.cli) else None)
            limit = rc.args.get("save_total_limit")
            k = max(len(f.siblings), 1)
            if isinstance(limit, int) and limit > 0:
                new = max(0, min(k + saves, limit + 1) - k)  # rotation deletes after saving: peak limit+1
            else:
                new = saves
            need = new * size
            if need <= f.fs_free:
                continue
            fits = f.fs_free // size
            p = parts(f)
            slim = p.total - p.optimizer - p.ds_model - sum(
                ff.size for n, ff in f.files.items() if n.rsplit("/", 1)[-1].startswith(("rng_state", "scheduler")))
            msg = (f"{saves} more save(s) until step {mx} (now {g}, save_steps {ss}) x {fmt_bytes(size)} per "
                   f"checkpoint = {fmt_bytes(need)} more"
                   + (f" (save_total_limit {limit})" if isinstance(limit, int) else " (save_total_limit unset: every "
                      "checkpoint is kept)")
                   + f", but {f.fs_mount or 'the filesystem'} has {fmt_bytes(f.fs_free)} free: room for {fits}. The "
                     f"run will die in a save with 'No space left on device' and leave a cut checkpoint.")
            fix = []
            if fits >= 1:
                lim = max(1, fits + k - 1)
                fix.append(f"--save_total_limit {lim}: at most {lim} checkpoints on disk ({lim + 1} while saving), "
                           f"which fits in {fmt_bytes(f.fs_free)} free.")
            if slim < size:
                fix.append(f"--save_only_model true: {fmt_bytes(slim)} per checkpoint instead of {fmt_bytes(size)} "
                           f"({fmt_bytes(slim * new)} for the remaining saves).")
            if saves > 1 and fits >= 1:
                fix.append(f"--save_steps {ss * -(-saves // fits)}: {min(saves, fits)} save(s) instead of {saves} "
                           f"(the last step is always saved).")
            if slim * new > f.fs_free or fits == 0:
                fix.append(f"Free at least {fmt_bytes(need - f.fs_free)} on {f.fs_mount or 'that filesystem'}, or "
                           f"point --output_dir at a larger disk.")
            if k > 1:
                fix.append(f"Delete or move older checkpoints now: {', '.join(sorted(f.siblings)[:-1][:4])} "
                           f"({fmt_bytes(sum(sorted(f.siblings.values())[:-1]))}).")
            ev = [_ev(f, "trainer_state.json", f'"global_step": {g}, "max_steps": {mx}, "save_steps": {ss}'),
                  _ev(f, "", f"{fmt_bytes(size)} per checkpoint; {fmt_bytes(f.fs_free)} free on {f.fs_mount}")]
            out.append(self.make(message=msg, fix=fix, evidence=ev))
        return out
