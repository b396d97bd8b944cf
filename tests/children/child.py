"""A child process for the watch tests: prints real log bytes, writes a run folder, then hangs, crashes,
floods or exits, as told. Only the standard library (it must start fast).

  child.py [--log FILE] [--stderr-log FILE] [--out DIR] [--jsonl FILE] [--args-json FILE]
           [--chunks] [--ckpt N] [--flood MB] [--ignore-term] [--then hang|sleep:S|exit:N|kill:SIG]
           [--final-log FILE] [--late S:TEXT] [--orphan quiet|hold|quiet-ignore] [--orphan-pid FILE] [--bigint-jsonl S]
"""
import hashlib
import os
import random
import signal
import sys
import time


def write(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def emit(fd, data, chunks):
    if not chunks:
        write(fd, data)
        return
    rng = random.Random(len(data))
    i = 0
    while i < len(data):
        n = rng.choice((1, 7, 100, 4096, 65536))
        write(fd, data[i:i + n])
        i += n


def main(argv):
    opts = {}
    flags = set()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--chunks", "--ignore-term"):
            flags.add(a)
            i += 1
        else:
            opts[a] = argv[i + 1]
            i += 2
    if "--ignore-term" in flags:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--handle-int" in opts:  # write a marker file when SIGINT arrives, then exit 130 like Python would
        marker = opts["--handle-int"]

        def on_int(signum, frame):
            with open(marker, "w") as f:
                f.write(str(signum))
            sys.exit(130)
        signal.signal(signal.SIGINT, on_int)
    out = opts.get("--out")
    run = os.path.join(out, "v0-20260101-000000") if out else None
    if run:
        os.makedirs(run, exist_ok=True)
    if run and "--args-json" in opts:
        with open(opts["--args-json"], "rb") as f, open(os.path.join(run, "args.json"), "wb") as g:
            g.write(f.read())
    if run and "--jsonl" in opts:
        with open(opts["--jsonl"], "rb") as f, open(os.path.join(run, "logging.jsonl"), "wb") as g:
            g.write(f.read())
        time.sleep(float(opts.get("--jsonl-wait", "0")))
    if "--log" in opts:
        with open(opts["--log"], "rb") as f:
            emit(1, f.read(), "--chunks" in flags)
    if "--stderr-log" in opts:
        with open(opts["--stderr-log"], "rb") as f:
            emit(2, f.read(), "--chunks" in flags)
    if "--pause" in opts:
        time.sleep(float(opts["--pause"]))
    if "--log2" in opts:
        with open(opts["--log2"], "rb") as f:
            emit(1, f.read(), False)
    if run and "--ckpt" in opts:
        d = os.path.join(run, f"checkpoint-{opts['--ckpt']}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "adapter_model.safetensors"), "wb") as f:
            f.write(b"\0" * int(opts.get("--ckpt-bytes", "1000")))
    if "--flood" in opts:
        total = int(float(opts["--flood"]) * 1024 * 1024)
        rng = random.Random(7)
        h1, h2 = hashlib.sha256(), hashlib.sha256()
        sent = 0
        while sent < total:
            n = min(rng.choice((1, 13, 4096, 65536, 200000)), total - sent)
            # random bytes (NUL, \r, broken UTF-8, no newline for long stretches) and long text lines
            block = rng.randbytes(n) if rng.random() < 0.3 else (b"flood " * (n // 6 + 1))[:n - 1] + b"\n"
            fd = 1 if rng.random() < 0.7 else 2
            (h1 if fd == 1 else h2).update(block)
            write(fd, block)
            sent += n
        if "--final-log" in opts:  # a traceback after the flood, on stderr (the analysis must still see it)
            with open(opts["--final-log"], "rb") as f:
                block = f.read()
            h2.update(block)
            write(2, block)
        with open(opts["--hashes"], "w") as f:
            f.write(h1.hexdigest() + " " + h2.hexdigest())
    if "--late" in opts:  # a process of the group that prints after the leader exited (the leader does not wait)
        delay, _, text = opts["--late"].partition(":")
        import subprocess
        subprocess.Popen([sys.executable, "-c", f"import time, sys; time.sleep({float(delay)}); "
                          f"print({text!r}, flush=True); print({text!r} + ' on stderr', file=sys.stderr, flush=True)"])
    if "--orphan" in opts:  # a process of the group that outlives the leader; "quiet": not holding the output open
        import subprocess
        quiet = opts["--orphan"] == "quiet"
        o = subprocess.Popen([sys.executable, "-c", "import signal, time\n"
                              + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if "ignore" in opts["--orphan"] else "")
                              + "time.sleep(3600)"],
                             stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.DEVNULL if quiet else None)
        if "--orphan-pid" in opts:
            with open(opts["--orphan-pid"], "w") as f:
                f.write(str(o.pid))
    if "--bigint-jsonl" in opts and run:  # one logging.jsonl row with a 401-digit integer (issue 18 point 9)
        with open(os.path.join(run, "logging.jsonl"), "a") as g:
            g.write('{"loss": ' + "9" * 401 + ', "global_step/max_steps": "1/10"}\n')
        time.sleep(float(opts["--bigint-jsonl"]))
    then = opts.get("--then", "exit:0")
    if then == "hang":
        while True:
            time.sleep(3600)
    kind, _, val = then.partition(":")
    if kind == "sleep":
        time.sleep(float(val))
        return 0
    if kind == "kill":
        os.kill(os.getpid(), int(val))
        time.sleep(5)
    return int(val or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
