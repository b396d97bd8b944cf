"""Where `grpo-doctor watch` spends its own CPU: every thread of one watch process under cProfile.

    python bench/profile_watch.py OUT.prof -- WATCH-ARGS... -- COMMAND...
    python bench/profile_watch.py OUT.prof --report [N]       # the N functions with the most own time, merged

cProfile sees only the thread that enabled it; watch reads the run's output and runs its rules in threads of its own
(doctor/live/), so each thread's ``run`` is wrapped in a profiler here, and the profiles of all threads are merged.
Used for the watch CPU share of the fault scoreboard (bench/scoreboard.py; figures in docs/SCOREBOARD.md).
"""
from __future__ import annotations

import cProfile
import os
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    out = sys.argv[1]
    if sys.argv[2:3] == ["--report"]:
        n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
        st = pstats.Stats(out)
        st.sort_stats("tottime").print_stats(n)
        st.sort_stats("cumulative").print_stats(n)
        return 0
    args = sys.argv[sys.argv.index("--") + 1:]
    profiles: list[cProfile.Profile] = []
    orig = threading.Thread.run

    def run(self):   # each thread under its own profiler
        p = cProfile.Profile()
        profiles.append(p)
        p.enable()
        try:
            orig(self)
        finally:
            p.disable()
    threading.Thread.run = run  # type: ignore[method-assign]
    main_p = cProfile.Profile()
    profiles.append(main_p)
    from doctor.cli import main as cli_main
    t0, c0 = time.monotonic(), time.process_time()
    code = 0
    main_p.enable()
    try:
        sys.argv = ["grpo-doctor", "watch", *args]
        cli_main()
    except SystemExit as e:
        code = int(e.code or 0) if not isinstance(e.code, str) else 1
    finally:
        main_p.disable()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    st = pstats.Stats(profiles[0])
    for p in profiles[1:]:
        try:
            st.add(p)
        except TypeError:   # a profiler that never ran
            pass
    st.dump_stats(out)
    print(f"watch: wall {wall:.1f} s, own CPU {cpu:.2f} s ({100 * cpu / wall:.1f}%), exit {code}; "
          f"profile: {out} ({len(profiles)} threads)", file=sys.stderr)
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
