"""GD618: a reward's verifier (math_verify) arms a SIGALRM timeout outside the main thread, which CPython refuses."""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# the frames that make the signal call a reward's: the verifier libraries that time out by SIGALRM, or reward code
_VERIFIERS = ("math_verify", "latex2sympy")
_REWARD_WORDS = ("reward", "orm.py", "scorer", "compute_score", "verifier")


def verifier_thread_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    exc = hits[0].exc
    paths = [f"{f.path} {f.func}".replace("\\", "/") for f in (exc.frames if exc else ())]
    verifier = next((p for p in paths if any(v in p for v in _VERIFIERS)), None)
    if paths and verifier is None and not any(w in p.lower() for p in paths for w in _REWARD_WORDS):
        return None  # another thread's signal call (a logger, a launcher): not a reward's
    who = ("math_verify's timeout wrapper" if verifier is not None else
           "the reward's code" if paths else "most often math_verify's timeout wrapper (no frames in the log)")
    msg = (f"A signal handler was installed outside the main thread by {who}: CPython allows signal.signal only in "
           "the main thread, and the reward runs in a worker thread (a thread pool, a Ray reward worker, a server's "
           "request thread). A reward that catches every exception turns this into 0 for every completion instead.")
    fix = ("Call math_verify without its signal timeouts in threaded reward code (math-verify >= 0.8: "
           "parse(..., parsing_timeout=None), verify(..., timeout_seconds=None)) and bound the time with the worker's "
           "own timeout; or run the reward in the main thread or in processes (trl's and verl's built-in accuracy "
           "rewards do so since their fixes: upgrade if the reward is theirs).",)
    return Diagnosis(message=msg, fix=fix, confidence=None if paths else "likely")
