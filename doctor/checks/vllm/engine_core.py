"""GD220: the vLLM engine core process failed (while starting or serving); the real error is printed above."""
from __future__ import annotations

from ...engine.state import RunState
from ...model import Role, Severity
from ...rules import Diagnosis, Hit
from ..memory._facts import facts_of


def engine_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    f = facts_of(ctx.run, hits[0].exc.frames if hits[0].exc else ())
    text = hits[0].exc.message if hits[0].exc else hits[0].evidence.text
    dead = "encountered an issue" in text or "encountered a fatal error" in text or "EngineDead" in (hits[0].exc.type if hits[0].exc else "")
    # a request path in the stack (vllm v1 llm_engine.add_request, ms-swift vllm_engine._add_request/infer): the
    # engine had started and died while serving
    serving_funcs = {"add_request", "_add_request", "generate", "infer", "_infer", "step", "get_output", "abort_request"}
    frames = [fr for e in ctx.exceptions for fr in e.frames] + [fr for _l, fs in ctx.open_tracebacks for fr in fs]
    dead = dead or "died unexpectedly" in text or any(fr.func in serving_funcs for fr in frames)
    roots = [x for x in ctx.findings if x.severity == Severity.error and x.role != Role.consequence]
    # vLLM's V0 engine (vllm/engine/async_llm_engine.py, 0.2-0.10): no engine core process; its asyncio background loop
    # logs the step's exception (its `async_llm_engine.py` ERROR lines) and every later request gets
    # AsyncEngineDeadError "Background loop has errored already" / "Background loop is stopped"
    v0 = "Background loop" in text or "AsyncEngineDeadError" in (hits[0].exc.type if hits[0].exc else text)
    if v0:
        msg = ("vLLM's engine (its V0 AsyncLLMEngine) stopped: its background loop raised an exception while running a "
               "step, and every request after it gets AsyncEngineDeadError. The cause is the first exception the loop "
               "logged (the `async_llm_engine.py` ERROR lines, or `Exception in callback ... run_engine_loop`, above "
               "this one)")
    else:
        msg = ("The vLLM engine core process " + ("died while serving requests" if dead else "failed while starting")
               + "; vLLM prints the real error above this line (lines prefixed `ERROR ... [core.py:...]` or "
                 "`(EngineCore...)`)")
    if roots:
        msg += f": {roots[0].rule_id} ({roots[0].title}) is that error, this line only reports it."
        fix = [f"Fix {roots[0].rule_id} first."]
    else:
        msg += ", and this log shows no such error."
        fix = [("Look above this line for the engine's own traceback (the first one the background loop logged: out "
                "of memory, a request the model cannot take, a bad argument) and run grpo-doctor on the complete log."
                if v0 else
                "Look above this line for the engine core's own traceback (out of memory, unsupported model "
                "architecture, bad argument) and run grpo-doctor on the complete log.")]
    title = "vLLM's engine stopped (its background loop died)" if v0 else None
    if roots:
        return Diagnosis(message=msg, fix=tuple(fix), title=title)
    if f.use_vllm and f.util is not None:
        fix.append(f"Memory is the most common cause: vllm_gpu_memory_utilization is {f.util_text()}" + (" in colocate mode, next to the training state: try 0.5 "
                                                             "or lower." if f.colocate and f.util > 0.5 else "."))
    fix.append("Set VLLM_LOGGING_LEVEL=DEBUG to see each engine step; a worker that died without a traceback was often "
               "killed by the host OOM killer (check `dmesg`).")
    return Diagnosis(message=msg, fix=tuple(fix), title=title)
