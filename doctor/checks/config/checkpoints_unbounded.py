"""GD462: checkpoints without save_total_limit: every one is kept; the projected disk use."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding, Severity
from ...values import as_int
from .._numbers import ASSUMED, COMPUTED, mark, read_or
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
        steps_ = read_or(as_int(run.get("save_steps"), floats=True), 500)
        save_steps = steps_.value
        rank_ = read_or(as_int(run.get("lora_rank"), floats=True), 8)
        tuner_set = run.get("tuner_type") or run.get("train_type")
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
                from ...swift.planner import lora_trainable
                T = lora_trainable(spec, rank_.value)
                per = (T * 4 + (0 if only_model else 12 * T)) / 1024 ** 3
                what = "adapter + optimizer states"
        # the size is an estimate from the model's shape (computed), assumed when it rests on a default
        lora = tuner != "full"
        how = ASSUMED if (lora and (rank_.assumed or not tuner_set)) else COMPUTED
        if per is None:
            size = "an unknown size (the model size is not known here)"
        else:
            size = f"about {mark(f'{per:.1f} GiB', how)} ({what})"
        msg = (f"--save_total_limit is not set, so ms-swift keeps every checkpoint (one each {steps_} steps), "
               f"each {size}.")
        if n and per is not None:
            msg += (f" With max_steps {max_steps} that is {mark(str(n), steps_.how if steps_.assumed else COMPUTED)} "
                    f"checkpoints, about {mark(f'{n * per:.0f} GiB', ASSUMED if steps_.assumed else how)} in total.")
        named = [f"save_steps {save_steps}"] if steps_.assumed else []
        if lora and per is not None:
            named += ([f"lora_rank {rank_.value}"] if rank_.assumed else []) + ([] if tuner_set else ["tuner lora"])
        if named:
            msg += f" Assumed (ms-swift's defaults, not in the command): {', '.join(named)}."
        fix = ["--save_total_limit 2 (keeps the last two; with load_best_model_at_end also the best)."]
        if tuner == "full" and not only_model:
            fix.append("--save_only_model true if you do not need to resume the optimizer (cuts a full checkpoint "
                       "to the weights).")
        sev = Severity.warning if (per is not None and (per >= 5 or (n and n * per >= 20))) else Severity.info
        return [self.make(message=msg, fix=fix, severity=sev)]
