"""GD235, GD236: the trainer's call to its rollout server failed (trl `vllm-serve` with GRPOConfig
use_vllm/vllm_mode="server", ms-swift `swift rollout` with --vllm_mode server): which side failed and at which
stage of the connection, read from the exception the client raised.

The clients' own raise sites: trl 0.29.1 trl/generation/vllm_client.py (`check_server`: "The vLLM server can't be
reached at {url} after {t} seconds"; every route: "Request failed: {status}, {text}"), ms-swift 4.6
swift/rlhf_trainers/vllm_client.py ("Servers not reachable after {t}s", "Server {i} failed: {status}, {text}",
"Server {i} init failed / update failed: {text}"); below them requests' ConnectionError (refused: nothing listens)
and ReadTimeout (the server accepted but did not answer in time); urllib3's ProtocolError ("Connection aborted.", with
http.client's RemoteDisconnected or a reset), which requests raises as ConnectionError, and requests'
ChunkedEncodingError: the server closed the connection while the call was in flight.
"""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_URL = lazyre.compile(r"https?://(?P<host>[\w.\-\[\]:]+?):(?P<port>\d{2,5})")
_POOL = lazyre.compile(r"host='(?P<host>[^']+)', port=(?P<port>\d+)")
# trl 0.16-0.17 check_server: "can't be reached at {host}:{server_port} after {total_timeout} seconds" (no scheme)
_BARE_HOST = lazyre.compile(r"can't be reached at (?P<host>[\w.\-]+):(?P<port>\d{2,5})\b")
_STATUS = lazyre.compile(r"(?:Request failed|Server \d+(?: \w+)? failed):? (?P<code>\d{3})\b|(?P<code2>\d{3}) (?:Client|Server) Error")
_OWN = lazyre.compile(r"can't be reached|not reachable|Request failed|Server \d+")
_DROPPED = lazyre.compile(r"Connection aborted|RemoteDisconnected|Remote end closed|Connection reset|IncompleteRead|"
                      r"ChunkedEncodingError|Connection broken")
_ROUTE = lazyre.compile(r"for url: \S+?:\d+(?P<route>/[\w/\-]*)|url: (?P<route2>/[\w/\-]*)")


def _where(text: str) -> tuple[str, str] | None:
    m = _URL.search(text) or _POOL.search(text) or _BARE_HOST.search(text)
    return (m.group("host"), m.group("port")) if m else None


def _stage(text: str, etype: str) -> str:
    s = _STATUS.search(text)
    code = (s.group("code") or s.group("code2")) if s else None
    if code:
        return code
    if _DROPPED.search(text) or _DROPPED.search(etype):
        return "dropped"
    if "Timeout" in etype or "timed out" in text:
        return "timeout"
    if "refused" in text or "NewConnectionError" in text or "Failed to establish" in text:
        return "refused"
    return "unreachable"


def _flags(framework: str | None) -> tuple[str, str, str]:
    """(server command, host/port setting, timeout setting) in the words of the framework that ran."""
    if framework == "ms-swift":
        return ("swift rollout --model <model>", "--vllm_server_host / --vllm_server_port",
                "--vllm_server_timeout")
    if framework is None:
        return ("the rollout server (trl vllm-serve, or swift rollout)", "the trainer's server host and port",
                "the client's server timeout")
    return ("trl vllm-serve --model <model>", "vllm_server_host / vllm_server_port (or vllm_server_base_url) in "
            "GRPOConfig", "vllm_server_timeout in GRPOConfig")


def server_command(framework: str | None) -> str:
    return _flags(framework)[0]


# model hubs: a connection to one of them is a download (transformers / huggingface_hub / modelscope fetching the
# model or dataset), never the rollout server
_HUBS = ("huggingface.co", "hf-mirror.com", "hf.co", "modelscope.cn", "modelscope.ai", "cdn-lfs")


def server_call_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    if all(h.exc is None and h.groups.get("path") for h in hits):
        from .server_routes import access_log_fix  # the server's own log: no client exception to read
        return access_log_fix(hits, ctx)
    # a chained traceback lists the socket's error first and the client's own (the one that names the stage) last
    own = [h for h in hits if h.exc is not None and _OWN.search(h.exc.message)]
    hit = own[0] if own else hits[-1]
    exc = hit.exc
    text = exc.message if exc is not None else hit.evidence.text
    etype = exc.type if exc is not None else ""
    stage = _stage(text, etype)
    where = _where(text)
    if where and any(where[0] == hub or where[0].endswith("." + hub) for hub in _HUBS):
        return None
    at = f"{where[0]}:{where[1]}" if where else "the configured host and port"
    url = f"http://{where[0]}:{where[1]}" if where else "http://HOST:PORT"
    framework = ctx.framework()[0]
    serve, hostport, timeout = _flags(framework)
    if stage in ("refused", "unreachable"):
        secs = re.search(r"after (\d+(?:\.\d+)?) ?s(?:econds)?\b", text)
        what = ("nothing accepted the connection" if stage == "refused" else "the trainer got no answer")
        if secs:
            what += f" within {secs.group(1)} s (the client's connection timeout, read from the message)"
        msg = (f"The trainer could not reach its rollout server at {at}: {what}. The trainer side failed at the "
               f"connection; the server was not up there, not yet up, or listens on another host or port.")
        fix = (f"Start the server first ({serve}) and wait for its 'Application startup complete' line, then check "
               f"from the trainer's host: `curl {url}/health/`.",
               f"No answer from curl: the server's own log says why it is not up; the address the trainer uses is "
               f"{hostport}.",
               "curl answers but the trainer does not: a proxy in the trainer's environment intercepts the call; "
               "unset http_proxy/https_proxy or add the server's host to no_proxy in the trainer's shell.")
        if framework == "unsloth":
            # unsloth's fast_inference puts the vLLM engine in the training process; a trl GRPOTrainer that still
            # looks for `trl vllm-serve` is a trl release this unsloth does not patch
            msg += (" In an unsloth run with fast_inference the engine is inside the training process and no server is "
                    "needed: a trainer that looks for one means the installed trl and unsloth do not belong together.")
            fix = ("Install the unsloth, unsloth_zoo and trl versions of unsloth's current notebook for this model "
                   "(unsloth patches the trl releases it supports), or set fast_inference=False to train without "
                   "vLLM generation.",) + fix
        if ctx.metrics_steps == 0:
            # never connected before a first step: the run cannot start, whatever stopped the server
            return Diagnosis(message=msg, fix=fix, category="hang-at-start")
    elif stage == "dropped":
        before = (f" The log holds {ctx.metrics_steps} metric row(s) of training steps before it: the server had "
                  f"answered earlier calls." if ctx.metrics_steps else "")
        msg = (f"The rollout server at {at} closed the connection while the trainer's request was in flight (no "
               f"answer came back).{before} The trainer only saw the connection drop: most often the server process "
               f"died, was killed or restarted while it handled the call (a proxy or a network cut drops it too), and "
               f"the server's own log says which.")
        fix = ("Read the end of the server's log (the terminal or file of the server process): its last lines before "
               "the drop name the failure (an out-of-memory, an engine error); `dmesg -T | grep -i kill` on the "
               "server's host shows whether the kernel's OOM killer ended it.",
               f"If the server process is gone, start it again ({serve}), then restart the trainer from its last "
               f"checkpoint: its weight-sync group was joined with the old server process.")
    elif stage == "timeout":
        msg = (f"The rollout server at {at} accepted the request but did not answer in time: generation (or a "
               f"weight update) took longer than the client waits.")
        fix = (f"Raise the client's timeout ({timeout}) or shorten the work per request (fewer or shorter "
               f"completions per call); the server's log shows whether it was still generating or had failed.",)
    elif stage in ("404", "405"):
        route = _ROUTE.search(text)
        path = (route.group("route") or route.group("route2")) if route else None
        msg = (f"The server at {at} has no such route{f' ({path})' if path else ''}: HTTP {stage}. The process "
               f"answering is not the rollout server this trainer expects: a plain `vllm serve` (OpenAI API) does "
               f"not serve the weight-sync and generate routes, and other releases name them differently.")
        fix = (f"Serve with {serve} (not `vllm serve`), from the same release of the trainer's package as the "
               f"trainer.",)
    elif stage == "422":
        msg = (f"The rollout server at {at} refused the request's fields (HTTP 422): the client and the server are "
               f"different releases that send and expect different payloads.")
        fix = ("Install the same trl (or ms-swift) release in the server's and the trainer's environment, and start "
               "the server again.",)
    else:
        msg = (f"The rollout server at {at} failed while handling the trainer's request (HTTP {stage}): the error is "
               f"on the server's side and its traceback is in the server's own log, not in the trainer's.")
        fix = ("Read the server's log at the time of this request (the terminal or file of the server process): the "
               "first exception there is the cause.",)
    return Diagnosis(message=msg, fix=fix)
