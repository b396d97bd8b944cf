"""GD417: the command passes a rollout mode (--vllm_mode) without --use_vllm true, and the run failed.

ms-swift >= 3.12 refuses this combination while parsing (`vllm_mode is not supported when use_vllm is false`,
rlhf_args.py ``_init_rollout``, GD403); earlier releases accept it and the trainer fails later, in the rollout or
the training step, because the vLLM client or engine that the mode needs was never created (server mode without
``--vllm_server_host`` has nothing to connect to either). Judged from the command.txt the user gave with the log.
"""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Evidence, Finding, Severity
from ...rules import Rule

_TRUE = {"true", "1", "yes", "y", "on"}


class ModeWithoutVllm(Rule):
    kinds = frozenset()

    def finish(self, ctx: RunState) -> list[Finding]:
        cli = ctx.run.cli
        mode = str(cli.get("vllm_mode") or "").strip("'\"").lower()
        if mode not in ("server", "colocate") or str(cli.get("use_vllm", "")).strip("'\"").lower() in _TRUE:
            return []
        failed = bool(ctx.exceptions or ctx.open_tracebacks)
        if ctx.preflight is False and not failed:
            return []
        server = mode == "server" and not (cli.get("vllm_server_host") or cli.get("vllm_server_base_url"))
        msg = (f"The command passes --vllm_mode {mode} without --use_vllm true"
               + (" and without --vllm_server_host" if server else "")
               + ": the trainer never creates the vLLM "
               + ("client" if mode == "server" else "engine")
               + f" that {mode} mode uses, so generation or the training step fails later (ms-swift >= 3.12 refuses "
               "the combination at start-up with `vllm_mode is not supported when use_vllm is false`; earlier "
               "releases accept it and crash in the rollout).")
        if failed:
            msg += " The log ends in a failure after start-up, which is where this shows."
        fix = [f"Add --use_vllm true to the command (with --vllm_mode {mode}"
               + (": start `swift rollout --model <model>` on GPUs the trainer does not use and pass "
                  "--vllm_server_host <host> --vllm_server_port <port>)" if mode == "server" else ")")
               + ", or drop --vllm_mode to generate without vLLM."]
        src = ctx.run.provenance.get("vllm_mode", "command")
        ev = [Evidence(src, 0, f"--vllm_mode {mode}")]
        if ctx.open_tracebacks:
            last = max((l for l, _f in ctx.open_tracebacks), key=lambda l: l.seq)
            ev.append(Evidence(last.where.path, last.where.line, last.raw))
        elif ctx.exceptions:
            e = ctx.exceptions[0]
            ev.append(Evidence(e.where.path, e.where.line, e.raw))
        return [self.make(message=msg, fix=fix, evidence=ev, severity=None if failed else Severity.warning)]
