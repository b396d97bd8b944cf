"""Launcher for the outlier test: starts N 'ranks' (RANK env), all wait in barrier() except rank ODD (or ranks
ODD,ODD2,...), stuck in a reward function; prints one real log line per rank, then waits for them like torchrun."""
import os
import subprocess
import sys

n, odd = int(sys.argv[1]), {int(x) for x in sys.argv[2].split(",")}
here = os.path.dirname(os.path.abspath(__file__))
procs = []
for r in range(n):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), PYTHONPATH=here)
    procs.append(subprocess.Popen([sys.executable, os.path.join(here, "rank.py"), str(int(r in odd))], env=env))
for p in procs:
    p.wait()
