"""Python's cyclic garbage collector while `grpo-doctor watch` starts: held off (doctor/cli.py's watch path), then
resumed once the rules are built (doctor/live/supervisor.py).

watch's start makes ~32,000 objects that live as long as the process (its modules, the rule catalog, the rules) and
almost no garbage (42 objects in cycles when the session of `watch -- true` is built); the collector, which runs
every 700 new objects, walked the young ones ~50 times for nothing, and the interpreter's collections at exit walked
them all again: 40 M of the 415 M instructions of `watch -- true` (callgrind). ``resume`` moves what exists to the
collector's permanent generation (gc.freeze: never walked again, not at exit either) and lets it run for what the
run makes. Only the process's entry holds it: watch called as a library (the tests, restart's supervisor in process)
leaves the collector as its caller set it. When watch is done, ``done`` freezes what the final report made too: the
interpreter's three collections at exit walked it (11 M instructions after the 48-line log of an argument error).
"""
from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Before watch imports its modules: no collection until ``resume`` (none when the caller disabled it already)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def resume() -> None:
    """The objects made so far kept out of every later collection, and the collector on again, if ``hold`` held it."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


def done() -> None:
    """watch has written its report and closed its files: nothing left for the interpreter's collections at exit to
    walk (they only delay the process's end; its memory goes back to the system whole)."""
    gc.freeze()
