"""GD961 (pattern rule's diagnose hook): an accelerate config (its YAML, or `accelerate env`'s dump of it) whose
num_processes, the total over all machines, is below num_machines or not a multiple of it: accelerate launches
num_processes // num_machines processes on each machine (utils/launch.py), none or fewer than the GPUs."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...values import as_int


def _last(hits: list[Hit], group: str) -> Hit | None:
    return next((h for h in reversed(hits) if h.groups.get(group)), None)


def accelerate_layout_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    procs_hit, machines_hit = _last(hits, "procs"), _last(hits, "machines")
    if procs_hit is None or machines_hit is None:
        return None
    procs, machines = as_int(procs_hit.groups["procs"]), as_int(machines_hit.groups["machines"])
    if procs is None or machines is None or machines < 2 or (procs >= machines and procs % machines == 0):
        return None
    per = procs // machines
    msg = (f"The accelerate config sets num_processes: {procs} with num_machines: {machines}. num_processes is the "
           f"total over all machines: accelerate launches num_processes // num_machines = {procs} // {machines} = "
           f"{per} process(es) on each machine"
           + (", so no process starts for training on a machine." if per == 0 else
              f", and {procs - per * machines} process(es) of the total are lost to the division."))
    fix = (f"Set num_processes to the GPUs of one machine times {machines} (e.g. 8 GPUs each: num_processes: "
           f"{8 * machines}) in the config of every machine (or `accelerate launch --num_processes {8 * machines} "
           f"--num_machines {machines} --machine_rank <0..{machines - 1}>`), the same value on each.",)
    return Diagnosis(message=msg, fix=fix)
