"""GD803: what a full checkpoint is made of, and what each fix saves."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding, Severity
from ...sources.checkpoint import config_dtype
from ._base import CkptRule, ev_at
from ._facts import CONFIG_TO_ST, base_dtype, fmt_bytes, fmt_params, kind, newest_per_run, parts, run_config


# ------------------------------------------------------------------------------------------ GD803
class Bloat(CkptRule):
    """What a full checkpoint is made of, and what each fix saves (seeds: 15 GB model, 43 GB checkpoints)."""

    def finish(self, ctx: RunState) -> list[Finding]:
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
            abnormal = []   # what this checkpoint holds beyond what a resumable checkpoint of its kind holds
            n_ckpt = max(len(f.siblings), 1)
            # AdamW keeps two moments per parameter in the parameters' dtype (2x the weights); DeepSpeed keeps float32
            # master weights and moments (12 bytes per parameter: 6x bf16 weights, 3x float32 ones)
            ds = bool(p.ds_model or f.deepspeed_tags)
            normal = (3.0 if p.weight_dtype == "F32" else 6.0) if ds else 2.0
            opt_ratio = (p.optimizer + p.ds_model) / w
            resumable = p.optimizer + p.ds_model + sum(
                ff.size for n, ff in f.files.items() if n.rsplit("/", 1)[-1].startswith(("rng_state", "scheduler")))
            if opt_ratio > normal * 1.25:
                abnormal.append(f"optimizer states {opt_ratio:.1f}x the weights, above the {normal:.0f}x "
                                + ("of DeepSpeed's float32 master weights and moments" if ds else
                                   "of AdamW's two moments in the weights' dtype (moments kept in float32?)"))
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
                    abnormal.append(f"float32 weights from a {bdt} base ({bsrc}; the checkpoint is "
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
            if not causes and not abnormal:
                continue
            ratio = p.total / w if w else 0
            msg = f"{f.name} takes {fmt_bytes(p.total)}, {ratio:.1f}x its weights: " + "; ".join(lines) + ". "
            if abnormal:
                msg += f"Larger than a resumable checkpoint of this kind holds: {'; '.join(abnormal)}."
                if causes:
                    msg += f" Also: {', '.join(causes)}."
            else:   # the usual full checkpoint: said so, as information, never a warning at every save
                msg += ("This is what a checkpoint that can resume training holds (the optimizer's states, "
                        f"{opt_ratio:.1f}x the weights, about the {normal:.0f}x "
                        + ("of DeepSpeed's float32 master weights and moments" if ds else "of AdamW's two moments")
                        + "; save_only_model defaults to false): nothing is abnormal for what it holds. "
                        f"What takes the disk: {', '.join(causes)}.")
            if n_ckpt > 1:
                msg += f" The run directory holds {n_ckpt} checkpoints, {fmt_bytes(sum(f.siblings.values()))} in all."
            ev = [ev_at(f, n, f"{n} {fmt_bytes(ff.size)}") for n, ff in
                  sorted(f.files.items(), key=lambda kv: -kv[1].size)[:4]]
            if abnormal:
                out.append(self.make(message=msg, fix=fixes, evidence=ev))
            else:
                out.append(self.make(message=msg, fix=fixes, evidence=ev, severity=Severity.info,
                                     title="Checkpoints hold the optimizer's states (normal; the fix saves disk)"))
        return out
