"""The long fuzz run: the properties of tests/fuzz/props.py over many generated inputs, each under a time and
memory bound. Every input that breaks a property (an exception, a control character in the output, invalid
JSON, markup from the input, more than --timeout seconds) is saved under fixtures/fuzz/ as a regression fixture
(logs as <sha>.log, replayed by tests/fuzz/test_fuzz.py; run directories as <sha>.rundir.json for a person to turn
into a test; watch inputs as <sha>.watch.txt, their repr), and counted.

    python tools/fuzz_long.py --examples 2000 [--strategy hostile_log,mutated_real_log,run_dir_files,watch_inputs]
        [--seed N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "fuzz"), str(ROOT)]
warnings.filterwarnings("ignore")

import props
import strategies as hs
from hypothesis import strategies as st  # noqa: F401


class _Timeout(Exception):
    pass


def _alarm(*_a) -> None:
    raise _Timeout()


def _save(data, why: str) -> Path:
    out = ROOT / "fixtures" / "fuzz"
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        p = out / f"{hashlib.sha256(data).hexdigest()[:16]}.log"
        p.write_bytes(data)
    elif isinstance(data, tuple):   # watch_inputs: (chunks, run-folder writes, backlog limit), for a person to replay
        blob = repr(data)
        p = out / f"{hashlib.sha256(blob.encode()).hexdigest()[:16]}.watch.txt"
        p.write_text(blob)
    else:
        blob = json.dumps({k: v.decode("utf-8", "surrogateescape") for k, v in data.items()}, ensure_ascii=True)
        p = out / f"{hashlib.sha256(blob.encode()).hexdigest()[:16]}.rundir.json"
        p.write_text(blob)
    (p.parent / (p.name + ".why")).write_text(why + "\n")
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=1000, help="inputs per strategy")
    ap.add_argument("--strategy", default="hostile_log,mutated_real_log,run_dir_files")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds one input may take")
    ap.add_argument("--memory-gib", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    lim = int(a.memory_gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    signal.signal(signal.SIGALRM, _alarm)
    random.seed(a.seed)
    tried = found = 0
    t0 = time.time()
    for name in a.strategy.split(","):
        strat = getattr(hs, name)()
        for _ in range(a.examples):
            data = strat.example()
            tried += 1
            signal.setitimer(signal.ITIMER_REAL, a.timeout)
            try:
                if name == "watch_inputs":
                    props.check_watch_inputs(*data)
                else:
                    (props.check_log_bytes if isinstance(data, bytes) else props.check_run_dir)(data)
                why = None
            except _Timeout:
                why = f"took more than {a.timeout:g} s"
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                why = "".join(traceback.format_exception(e, limit=-6))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if why:
                found += 1
                p = _save(data, why)
                print(f"FOUND {p.name}: {why.strip().splitlines()[-1]}", flush=True)
    print(f"{tried} inputs tried in {time.time() - t0:.0f} s; {found} broke a property")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
