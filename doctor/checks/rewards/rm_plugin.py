"""GD604: --reward_model_plugin values that do not line up with --reward_model, or are not registered."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ._flags import as_list, int_or_none


def rm_plugin_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    run = ctx.run
    models = as_list(run.args.get("reward_model"))
    plugins = as_list(run.args.get("reward_model_plugin"))
    if g.get("np") is not None:
        n_p, n_m = int_or_none(g.get("np")), int_or_none(g.get("nm"))
        msg = (f"{n_p} --reward_model_plugin value(s) for {n_m} --reward_model(s): each reward model needs its own "
               f"plugin entry, in the same order.")
        fix = [f"Pass {n_m} values to --reward_model_plugin (use the built-in 'default' for a plain reward model), or "
               f"drop --reward_model_plugin."]
        if models:
            fix.append(f"Reward models in this run: {' '.join(models)}.")
        return Diagnosis(message=msg, fix=tuple(fix))
    name = g.get("name") or "?"
    msg = (f"--reward_model_plugin '{name}' is not registered in the rm_plugins registry.")
    fix = [f"Register it in your --external_plugins file: `rm_plugins['{name}'] = MyRMPlugin` (ms-swift "
           f"docs: Reward Model plugin), or use a built-in plugin name ('default', 'genrm')."]
    if plugins:
        fix.append(f"This run asked for --reward_model_plugin {' '.join(plugins)}.")
    return Diagnosis(message=msg, fix=tuple(fix))
