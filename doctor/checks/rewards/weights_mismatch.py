"""GD602: --reward_weights does not have one weight per reward function."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._flags import as_list, int_or_none, reward_names


def weights_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    run = ctx.run
    g = hits[0].groups
    n_w, n_f = int_or_none(g.get("nw")), int_or_none(g.get("nf"))
    funcs = reward_names(run)
    models = as_list(run.args.get("reward_model"))
    weights = as_list(run.args.get("reward_weights"))
    msg = (f"--reward_weights has {n_w if n_w is not None else '?'} value(s) but the trainer has "
           f"{n_f if n_f is not None else '?'} reward function(s): one weight per reward function, in order.")
    fix: list[str] = []
    parts = []
    if funcs:
        parts.append(f"--reward_funcs {' '.join(funcs)}")
    if models:
        parts.append(f"--reward_model {' '.join(models)}")
    if parts:
        fix.append(f"This run has {' and '.join(parts)}: the weights follow that order (reward functions first, then "
                   f"each reward model; gym_reward counts too).")
    if n_f:
        base = [w for w in weights][:n_f]
        while len(base) < n_f:
            base.append("1.0")
        fix.append(f"Pass exactly {n_f} weights, e.g. --reward_weights {' '.join(base)}, or drop --reward_weights "
                   f"(all 1.0).")
    return Diagnosis(message=msg, fix=tuple(fix))
