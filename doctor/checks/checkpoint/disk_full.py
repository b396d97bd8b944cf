"""GD804: the disk fills up before the run has saved its last checkpoint."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Finding
from ._base import CkptRule, ev_at
from ._facts import fmt_bytes, newest_per_run, parts, run_config


# ------------------------------------------------------------------------------------------ GD804
def remaining_saves(global_step: int, max_steps: int, save_steps: int) -> int:
    """Saves still to come: every multiple of save_steps after global_step, plus the final step."""
    if max_steps <= global_step or save_steps <= 0:
        return 0
    n = max_steps // save_steps - global_step // save_steps
    if max_steps % save_steps:
        n += 1
    return n


class DiskFull(CkptRule):
    def finish(self, ctx: RunState) -> list[Finding]:
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
            ev = [ev_at(f, "trainer_state.json", f'"global_step": {g}, "max_steps": {mx}, "save_steps": {ss}'),
                  ev_at(f, "", f"{fmt_bytes(size)} per checkpoint; {fmt_bytes(f.fs_free)} free on {f.fs_mount}")]
            out.append(self.make(message=msg, fix=fix, evidence=ev))
        return out
