"""GD236 on the server's own access log (doctor/checks/vllm/server_routes.py): uvicorn's line for a refused route
says which server the client expected, so which side is wrong."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader


def findings(text: str):
    s = Session(load_catalog())
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return [f for f in s.finish() if f.rule_id == "GD236"]


def access(path: str, status: str = "404 Not Found", verb: str = "POST") -> str:
    return f'INFO:     127.0.0.1:43320 - "{verb} {path} HTTP/1.1" {status}\n'


def test_weight_sync_routes_refused_mean_another_server_on_the_port():
    # PrimeIntellect-ai/verifiers#510's paste: /health answers, the trainer's weight-sync routes do not
    text = access("/health", "200 OK", "GET") + access("/get_world_size", verb="GET") + access("/init_communicator")
    (f,) = findings(text)
    assert f.category == "vllm-version-incompatible"
    assert "`/get_world_size`, `/init_communicator`" in f.message and "(2 such lines in the log)" in f.message
    assert "weight-sync" in f.message and "vllm serve" in f.message
    assert [e.line for e in f.evidence] == [2, 3]


def test_an_openai_route_without_v1_is_the_clients_base_url():
    (f,) = findings(access("/chat/completions"))
    assert f.category == "argument-error-other" and f.title.startswith("The client calls the server")
    assert "/v1/chat/completions" in f.message and any("ends in /v1" in x for x in f.fix)
    assert "not the server the client was written for" not in f.message   # the right server, the wrong path


def test_a_v1_route_refused_is_the_model_name_or_the_kind_of_server_and_says_it_is_not_sure():
    (f,) = findings(access("/v1/chat/completions"))
    assert f.confidence == "possible" and "model" in f.message and any("/v1/models" in x for x in f.fix)


def test_the_demo_servers_generate_route_on_the_openai_server():
    # vllm-project/vllm#5082: POST /generate against `python -m vllm.entrypoints.openai.api_server`
    (f,) = findings(access("/generate") + access("/generate", verb="GET"))
    assert f.category == "argument-error-other" and "vllm.entrypoints.api_server" in f.message
    assert any("/v1/completions" in x for x in f.fix)


def test_a_refused_payload_is_two_releases():
    (f,) = findings(access("/update_named_param/", "422 Unprocessable Entity"))
    assert "HTTP 422" in f.message and "release" in f.message


def test_answered_and_failed_requests_are_not_a_missing_route():
    assert findings(access("/health", "200 OK", "GET")) == []
    assert findings(access("/v1/chat/completions", "500 Internal Server Error")) == []
    # a 404 named in prose, not an access-log line
    assert findings("I get 404 Not Found on /generate\n") == []
