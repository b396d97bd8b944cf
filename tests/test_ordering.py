"""Which finding comes first (issue 15 point 7): a start-up connection failure before the collective
timeouts it causes; the first failing rank's error before every timeout; a hang before a quality warning."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader

SOCKET = ("[W526 03:50:39.899673126 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host "
          "127.0.0.1:51216 - retrying (try=0, timeout=300000ms, delay=87775ms): The client socket has timed out "
          "after 300000ms while trying to connect to (127.0.0.1, 51216).\n")
WATCHDOG = ("[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL("
            "SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600052 milliseconds "
            "before timing out.\n")


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def test_start_up_connection_failure_outranks_the_collective_timeout():
    found = run(SOCKET + WATCHDOG)
    assert [f.rule_id for f in found][:2] == ["GD305", "GD301"]


def test_first_failing_rank_outranks_timeouts_even_when_classified_structurally():
    text = ('[rank2]: Traceback (most recent call last):\n'
            '[rank2]:   File "/x/site-packages/vllm/v1/worker/gpu_model_runner.py", line 9, in execute_model\n'
            '[rank2]:     out = self.model(x)\n'
            '[rank2]: RuntimeError: a new engine failure\n' + WATCHDOG)
    found = run(text)
    assert found[0].rule_id == "GD991" and found[0].role.value == "root"
    assert found[1].rule_id == "GD301" and found[1].role.value == "consequence"
