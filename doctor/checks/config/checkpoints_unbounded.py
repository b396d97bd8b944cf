"""GD462: checkpoints without save_total_limit: every one is kept; the projected disk use."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding, Severity
from ...swift.planner import lora_trainable
from ...values import as_int
from ._base import _bool, _ConfigRule, model_spec


class CheckpointDisk(_ConfigRule):
    """GD462: save_total_limit unset: every checkpoint is kept. Project the disk use."""

    def check(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        if run.get("save_total_limit") is not None or str(run.get("save_strategy", "")).lower() == "no":
            return []
        spec = model_spec(ctx)
        tuner = str(run.get("tuner_type") or run.get("train_type") or "lora").lower()
        only_model = _bool(run.get("save_only_model"))
        ds = str(run.get("deepspeed") or "")
        save_steps = as_int(run.get("save_steps"), floats=True) or 500
        max_steps = as_int(run.get("max_steps"), floats=True)
        n = (max_steps // save_steps + (1 if max_steps % save_steps else 0)) if max_steps and max_steps > 0 else None
        per = None
        what = ""
        if spec is not None:
            P = spec.params
            if tuner == "full":
                weights = 2 * P
                if only_model:
                    opt, what = 0.0, "bf16 weights"
                elif ds:
                    opt, what = 12 * P + (0 if "3" in ds else 2 * P), "bf16 weights + DeepSpeed fp32 optimizer states"
                else:
                    opt, what = 4 * P, "bf16 weights + AdamW optimizer.pt"
                per = (weights + opt) / 1024 ** 3
            else:
                T = lora_trainable(spec, as_int(run.get("lora_rank"), floats=True) or 8)
                per = (T * 4 + (0 if only_model else 12 * T)) / 1024 ** 3
                what = "adapter + optimizer states"
        if per is None:
            size = "an unknown size (the model size is not known here)"
        else:
            size = f"about {per:.1f} GiB ({what})"
        msg = (f"--save_total_limit is not set, so ms-swift keeps every checkpoint (one each {save_steps} steps), "
               f"each {size}.")
        if n and per is not None:
            msg += f" With max_steps {max_steps} that is {n} checkpoints, about {n * per:.0f} GiB in total."
        fix = ["--save_total_limit 2 (keeps the last two; with load_best_model_at_end also the best)."]
        if tuner == "full" and not only_model:
            fix.append("--save_only_model true if you do not need to resume the optimizer (cuts a full checkpoint "
                       "to the weights).")
        sev = Severity.warning if (per is not None and (per >= 5 or (n and n * per >= 20))) else Severity.info
        return [self.make(message=msg, fix=fix, severity=sev)]
