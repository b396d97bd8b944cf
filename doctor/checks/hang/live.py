"""The live side of the hang rules GD320 / GD321 (``grpo-doctor watch``; formerly GD901 / GD902): no progress for
longer than the phase allows, before the first training step or after it. The live hang watchdog
(doctor/live/watchdogs.py) decides when a phase's limit passed and sends a HangReport; the hang rules turn it
into their finding (it replaces the post-mortem guess from the log's last lines)."""
from __future__ import annotations

from ...model import Evidence, Finding, Severity
from ...rules import Rule
from ...signals import HangReport
from .._units import secs


def live_finding(rule: Rule, reports: list[HangReport], steps_now: int = 0) -> Finding:
    """The finding of a hang rule (GD320 before the first step, GD321 after) from the live watchdog's reports: the
    silence it measured, where the run stopped, the stacks, the outlier rank. ``steps_now``: the last training step
    the run reached; past the step of the last report, the run moved on (a stall, not a hang)."""
    r = reports[-1]
    resumed = steps_now > r.steps and not r.stopped
    parts = [f"No progress for {secs(r.silent_s)} s during {r.phase_text} (limit {secs(r.limit_s)} s: {r.limit_basis})"
             + (f", after training step {r.steps}" if r.steps else "") + f"; last progress: {r.last_progress}."]
    action = None
    if r.where:
        parts.append(f"It stopped {r.where_text}.")
        if r.where == "reward-function" and not resumed:
            # the same reward code runs again on a restart and stops at the same call: the code changes first
            parts.append("A restart runs the same reward code and most likely stops at the same call (unless what it "
                         "waited on was down for a moment): fix the reward function first (a timeout on the call), "
                         "then relaunch.")
            action = "stop"
    if r.outlier:
        parts.append(r.outlier + ".")
    if r.stacks:
        parts.append("Stacks: " + " | ".join(r.stacks[:8]) + ".")
    if r.stacks_file:
        parts.append(f"Full stacks, process states and GPU snapshot: {r.stacks_file}.")
    if r.missing:
        parts.append("Not captured: " + "; ".join(r.missing) + ".")
    if r.stopped:
        parts.append("grpo-doctor stopped the run (--on-hang stop).")
    if resumed:
        parts.append(f"Progress resumed afterwards (training step {steps_now}): a stall the run came out of.")
    fix = list(_WHERE_FIX.get(r.where or "", ()))
    fix += list(rule.meta.options.get("live_fix", rule.meta.fix))
    ev = [Evidence(r.last_path, r.last_lineno, r.last_line[:400])] if r.last_line else []
    # a measured silence past the limit that the run never came out of is a failure, whatever stopped it
    sev = rule.meta.severity if resumed else Severity.error
    return rule.make(message=" ".join(parts), fix=fix, evidence=ev, severity=sev, count=len(reports), action=action)


_WHERE_FIX = {
    "reward-function": ("A reward function never returned: add a timeout to its network / subprocess / sandbox calls "
                        "(and return a reward of 0 on timeout) so one slow sample cannot stall every rank.",),
    "rollout-generation": ("vLLM generation never finished: lower --max_completion_length or --vllm_max_model_len, "
                           "check the vLLM engine log lines above for an engine error, and set --vllm_gpu_memory_utilization "
                           "so the KV cache is not starved.",),
    "weight-sync": ("Weight sync to vLLM stalled: in server mode check that `swift rollout` is alive and that the "
                    "group port is reachable; in colocate mode try --move_model_batches / --offload_model.",),
    "nccl-collective": ("Ranks wait in a collective that one rank never reached: look at the outlier rank's stack; "
                        "--ddp_timeout 1800 turns such a silent desync into an NCCL timeout with a traceback.",),
    "data-loading": ("The dataloader stalled: try --dataloader_num_workers 0 to see the real error, and check the "
                     "dataset storage (network file system, image URLs).",),
    "checkpoint-save": ("The checkpoint save stalled: check free disk space and the file system of --output_dir; with "
                        "ZeRO-3 the 16-bit gather needs every rank.",),
}
