"""GD211, from the configuration alone: the rollout server's launch (`swift rollout`, `trl vllm-serve`, `vllm serve`)
and the trainer's (`swift rlhf`, `accelerate launch`...) list the same GPUs in their CUDA_VISIBLE_DEVICES."""
from __future__ import annotations

from typing import Any

from ...engine.state import RunState
from ...model import Finding
from ...rules import Rule
from ...sources.command_text import PROGRAMS, SERVER_COMMANDS, Launch

_TRAINERS = ("rlhf", "sft", "pt", "accelerate")


def _gpus(launch: Launch) -> list[str] | None:
    raw = launch.env.get("CUDA_VISIBLE_DEVICES")
    if not raw or "$" in raw:
        return None  # not set, or set from a variable the command does not show
    ids = [x.strip() for x in raw.split(",") if x.strip()]
    return ids if all(x.isdigit() for x in ids) else None


class ServerGpus(Rule):
    """Reads the launches the run's configuration holds, at the end."""

    kinds: frozenset = frozenset()

    def feed(self, signal: Any) -> None:  # pragma: no cover - no signal kind is routed here
        return None

    def finish(self, ctx: RunState) -> list[Finding]:
        launches = ctx.run.launches
        server = next((x for x in launches if x.command in SERVER_COMMANDS and _gpus(x)), None)
        trainer = next((x for x in launches if x.command in _TRAINERS and _gpus(x)), None)
        if server is None or trainer is None:
            return []
        s_ids, t_ids = _gpus(server) or [], _gpus(trainer) or []
        both = [x for x in t_ids if x in s_ids]
        if not both:
            return []
        s_name, t_name = PROGRAMS[server.command], PROGRAMS[trainer.command]
        msg = (f"`{s_name}` runs on CUDA_VISIBLE_DEVICES={','.join(s_ids)} and `{t_name}` on "
               f"CUDA_VISIBLE_DEVICES={','.join(t_ids)} (read from the two launches): GPU(s) {','.join(both)} serve "
               f"both. The server's vLLM reserves its gpu_memory_utilization of each of its GPUs at start-up, so a "
               f"training process on a shared GPU runs out of memory, or the weight-sync group finds two of its ranks "
               f"on one GPU.")
        own = [x for x in t_ids if x not in s_ids]
        if own:
            fix = [f"Train on the GPUs the server does not use: CUDA_VISIBLE_DEVICES={','.join(own)} for `{t_name}`"
                   + (f" with NPROC_PER_NODE={len(own)}" if trainer.command in ("rlhf", "sft", "pt") else
                      f" with --num_processes {len(own)}") + "."]
        else:
            fix = [f"Every training GPU is also the server's: give `{s_name}` GPUs of its own (e.g. the last "
                   f"{len(s_ids)} of the machine) and train on the others."]
        fix.append("Or generate inside the training processes instead: --vllm_mode colocate (vLLM shares the "
                   "training GPUs by design, with a lower gpu_memory_utilization).")
        return [self.make(message=msg, fix=fix)]
