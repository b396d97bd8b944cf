"""GD322: a rollout server log that stops in a start-up phase with no error, as the whole catalog ranks it (the near
misses, a server that serves or fails, are cases in rules/hang/cases.toml)."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader

READY = ("INFO 07-02 12:40:33 [core.py:159] init engine (profile, create kv cache, warmup model) took 35.93 seconds\n"
         "INFO 07-02 12:40:35 [core_client.py:439] Core engine process 0 ready.\n")
SERVING = ("INFO:     Started server process [123]\nINFO:     Waiting for application startup.\n"
           "INFO:     Application startup complete.\n"
           'INFO:     127.0.0.1:1 - "GET /health/ HTTP/1.1" 200 OK\n'
           'INFO:     127.0.0.1:1 - "POST /init_communicator/ HTTP/1.1" 200 OK\n')


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("server.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def ids(found):
    return [f.rule_id for f in found]


def test_engine_ready_then_silence_is_a_start_stall():
    found = run(READY)
    assert ids(found)[:1] == ["GD322"] and found[0].category == "hang-at-start"
    assert found[0].evidence[0].line == 2 and "Application startup complete" in found[0].message


def test_init_communicator_then_silence_names_the_weight_sync_group():
    found = run(READY + SERVING)
    assert ids(found)[:1] == ["GD322"] and "/init_communicator/" in found[0].message


def test_an_engine_inside_a_trainers_ray_job_is_not_called_a_server():
    # OpenRLHF's LLMRayActor holds its vLLM engine in the trainer's own Ray job: no HTTP server to wait for
    text = ("(LLMRayActor pid=1404966) INFO 03-13 01:59:49 model_runner.py:1562] Graph capturing finished in 16 secs\n"
            "(LLMRayActor pid=1404966) INFO 03-13 01:59:49 llm_engine.py:431] init engine (profile, create kv cache, "
            "warmup model) took 21.05 seconds\n")
    found = run(text)
    assert ids(found)[:1] == ["GD322"] and found[0].category == "hang-at-start"
    assert "Application startup complete" not in found[0].message and "first generation" in found[0].title
    assert any("ray status" in x for x in found[0].fix)
