"""A server's own access log refusing a route (uvicorn's `"POST /init_communicator/ HTTP/1.1" 404 Not Found`): which
server defines the route the client asked for, so which side is the wrong one.

The routes, from the servers' own sources: trl 0.17-0.29 trl/scripts/vllm_serve.py (`/health/`, `/get_world_size/`,
`/generate/`, `/chat/`, `/init_communicator/`, `/update_named_param/`, `/batch_update_named_params/`,
`/reset_prefix_cache/`, `/close_communicator/`), ms-swift 3.x-4.x swift/llm/infer/rollout.py (the same weight-sync
routes, `/infer/`, `/get_engine_type/`, `/update_flattened_params/`); vLLM's OpenAI-compatible server
vllm/entrypoints/openai/api_server.py (`/v1/completions`, `/v1/chat/completions`, `/v1/models`, `/health`,
`/tokenize`...; an unknown `model` is answered 404 too, by its NotFoundError) and its older demo server
vllm/entrypoints/api_server.py (`/generate`). uvicorn's AccessFormatter prints `client - "METHOD path HTTP/v" status`.
"""
from __future__ import annotations

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from .server_client import server_command

# the routes only a trainer's rollout server defines (trl vllm-serve, swift rollout, verifiers' server built on trl's)
ROLLOUT_ROUTES = frozenset({"health", "get_world_size", "generate", "chat", "init_communicator", "update_named_param",
                            "batch_update_named_params", "update_flattened_params", "reset_prefix_cache",
                            "close_communicator", "infer", "get_engine_type"})
# the OpenAI API's routes, served under /v1 by vLLM (and every OpenAI-compatible server)
OPENAI_ROUTES = frozenset({"completions", "chat/completions", "models", "embeddings", "responses"})
WEIGHT_SYNC = frozenset({"get_world_size", "init_communicator", "update_named_param", "batch_update_named_params",
                         "update_flattened_params", "close_communicator"})


def _name(route: str) -> str:
    return route.split("?", 1)[0].strip("/")


def access_log_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    first = hits[0]
    status, route = first.groups["status"], first.groups["path"]
    refused = list(dict.fromkeys(h.groups["path"] for h in hits))
    shown = ", ".join(f"`{r}`" for r in refused[:4]) + (f" and {len(refused) - 4} more" if len(refused) > 4 else "")
    times = f" ({len(hits)} such lines in the log)" if len(hits) > 1 else ""
    name = _name(route)
    framework = ctx.framework()[0]
    # not told: trl's server, the one trl and the trainers built on it (open-r1, verifiers' trainer) call
    serve = server_command(framework) if framework else "trl vllm-serve for trl and the trainers built on it"
    if status == "422":
        msg = (f"The server's own log shows it refused the fields of a request to `{route}` (HTTP 422){times}: the route "
               f"exists but the client sent a body this server's release does not take. The client and the server "
               f"are different releases of the package that defines both.")
        fix = ("Install the same release of the package (trl, ms-swift, verifiers) in the client's and the server's "
               "environment, and start the server again.",)
        return Diagnosis(message=msg, fix=fix)
    lead = (f"The server's own log shows it has no route {shown} (HTTP {status}){times}: the process listening on that "
            f"port is up and answering, but it is not the server the client was written for.")
    client_side = dict(category="argument-error-other", title="The client calls the server at a route it does not serve",
                       verify="the server's log answers the client's requests with 200")
    if name in OPENAI_ROUTES:
        msg = (f"The server's own log shows it has no route {shown} (HTTP {status}){times}. `{route}` is an OpenAI API "
               f"route without its `/v1` prefix: vLLM's OpenAI-compatible server serves it as `/v1/{name}`, so the "
               f"client's base URL lacks /v1.")
        fix = ("Give the client a base URL that ends in /v1 (http://HOST:PORT/v1): the OpenAI client appends "
               f"/{name} to it.",)
        return Diagnosis(message=msg, fix=fix, **client_side)
    elif name.startswith("v1/"):
        msg = (f"The server's own log shows {shown} answered HTTP {status}{times}. vLLM's OpenAI-compatible server "
               f"answers 404 on its own routes when the request names a model it does not serve, and any other server "
               f"(vLLM's older demo server, a trainer's rollout server) has no /v1 routes at all.")
        fix = ("Ask the server which model names it serves (`curl http://HOST:PORT/v1/models`) and use that name in "
               "the request (vLLM serves the path given to `vllm serve` unless --served-model-name says otherwise); if "
               "that route answers 404 too, the process on that port is not an OpenAI-compatible server.",)
        # two causes the line cannot tell apart: the model's name or the kind of server
        return Diagnosis(message=msg, fix=fix, confidence="possible", **client_side)
    elif name == "generate" and not route.endswith("/"):
        msg = (lead + " `/generate` is the route of vLLM's older demo server (vllm.entrypoints.api_server), which "
               "the OpenAI-compatible server (`vllm serve`, vllm.entrypoints.openai.api_server) does not have.")
        fix = ("Send the request to the OpenAI API instead (POST /v1/completions with `model` and `prompt`, or "
               "/v1/chat/completions), or start the demo server (python -m vllm.entrypoints.api_server) if the "
               "client needs /generate.",)
        return Diagnosis(message=msg, fix=fix, **client_side)
    elif name in ROLLOUT_ROUTES:
        sync = " (the weight-sync routes)" if name in WEIGHT_SYNC else ""
        msg = (lead + f" {shown} {'is a route' if len(refused) == 1 else 'are routes'}{sync} that only a trainer's "
               f"rollout server defines (trl vllm-serve, swift rollout): the server on that port is another one, most "
               f"often a plain `vllm serve` (the OpenAI API), or a release whose routes are named otherwise.")
        fix = (f"Start the rollout server of the trainer's own framework and release on that port ({serve}), not "
               f"`vllm serve`.",
               "Run the same release of that framework in the server's and the trainer's environment: the client "
               "and the server come from the same package.")
    else:
        msg = lead + " The client's own code names the route it expects; the server's release or kind differs."
        fix = ("Compare the route the client calls with the routes the server lists (a FastAPI server shows them at "
               "http://HOST:PORT/docs), and run the server the client was written for.",)
    return Diagnosis(message=msg, fix=fix)
