"""The hang watchdog: pure logic with an injectable clock (no I/O, no threads).

Progress is a new training step, a logging.jsonl row, a new checkpoint folder or a rollout line; before
the first step any output counts (a model load prints, a stuck one does not). Each phase has its own
limit; the steady-state limit calibrates itself from observed step times (``factor`` x the slowest step,
never below ``floor``) unless fixed with --hang-timeout.

After the last training step (the step count reached the run's total, or the run printed its end line) the run is
in teardown: the final save, plots, the process-group shutdown and torchrun's exit, which under load can take longer
than the between-steps limit. Output counts as progress there, and its limit is a save's. A checkpoint save's limit
is bounded by the step limit: ``save_factor`` (3) x the steady limit (the --hang-timeout or the calibrated one), at
most ``save_cap`` (1800 s), unless fixed with --phase-timeout checkpoint-save, because ms-swift logs `Saving model
checkpoint` *after* the save: a hang in the next step would otherwise be judged under a save's limit. A long save is
not silent: the checkpoint folder growing counts as progress (doctor/live/analysis.py), and the save's own end
(transformers writes trainer_state.json last) sends the run back to the step limit (doctor/live/hangs.py).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# phases of the HangCheck rule (doctor/checks/hang/post_mortem.py) -> watchdog phases
PHASE_OF = {
    None: "startup", "launch": "startup", "setup": "startup", "server-connect": "startup",
    "server-connected": "startup", "model-load": "startup", "model-loaded": "startup", "dataset-map": "startup",
    "trainer-init": "vllm-init", "vllm-init": "vllm-init",
    "first-step": "first-step", "training": "steady", "eval": "eval", "checkpoint-save": "checkpoint-save",
}
PHASE_TEXT = {
    "startup": "startup (launch, model and dataset loading)",
    "vllm-init": "trainer init (reference/reward models, the colocated vLLM engine)",
    "first-step": "the first training step (first rollout, rewards, first optimizer step)",
    "steady": "training steps",
    "eval": "evaluation",
    "checkpoint-save": "checkpoint save",
    "teardown": "teardown after the last training step (final save, process-group shutdown, the launcher's exit)",
}
PHASES = tuple(PHASE_TEXT)


@dataclass
class Limits:
    """The silence each phase of a run may last before watch calls it a hang (seconds)."""
    startup: float = 1800.0
    vllm_init: float = 1200.0
    first_step: float = 1800.0
    steady: float | None = None      # None: calibrate from step times
    steady_floor: float = 300.0
    steady_factor: float = 5.0
    eval: float = 1800.0
    checkpoint_save: float | None = None   # None: save_factor x the steady limit, at most save_cap
    save_factor: float = 3.0
    save_cap: float = 1800.0
    teardown: float | None = None          # None: as a save, save_factor x the steady limit, at most save_cap

    def set(self, phase: str, seconds: float) -> None:
        key = phase.replace("-", "_")
        if key not in ("startup", "vllm_init", "first_step", "steady", "eval", "checkpoint_save", "teardown"):
            raise ValueError(f"unknown phase {phase!r}: use one of {', '.join(PHASES)}")
        setattr(self, key, float(seconds))


@dataclass
class HangEvent:
    """A hang the watchdog saw: the phase, how long the run was silent and the limit."""
    phase: str
    silent_s: float
    limit_s: float
    basis: str
    steps: int
    last_progress: str


@dataclass
class HangWatchdog:
    """The hang watchdog's state: the run's progress per phase, timed against its Limits."""
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.started = self.clock()
        self.last_t = self.started
        self.last_what = "launch"
        self.phase = "startup"
        self.steps = 0
        self.step_t: float | None = None
        self.slowest: float | None = None
        self.fired = False
        self.resumed = 0       # times progress came back after a reported hang

    # ------------------------------------------------------------ inputs
    def progress(self, what: str, now: float | None = None) -> bool:
        """Record progress; returns True when it ends a hang that was reported (the run resumed)."""
        self.last_t = self.clock() if now is None else now
        self.last_what = what
        resumed, self.fired = self.fired, False
        self.resumed += resumed
        return resumed

    def output(self, now: float | None = None) -> bool:
        """Any output line: progress only before the first step."""
        if (self.steps == 0 and self.phase in ("startup", "vllm-init", "first-step")) or self.phase == "teardown":
            return self.progress("output line", now)
        return False

    def step(self, k: int, now: float | None = None) -> bool:
        if k <= self.steps:
            return False
        now = self.clock() if now is None else now
        if self.step_t is not None and self.steps >= 1:
            # a printed step may have 400 digits (garbage in a log): int/float division would overflow
            per = (now - self.step_t) / min(k - self.steps, 1 << 60)
            if self.slowest is None or per > self.slowest:
                self.slowest = per
        self.steps, self.step_t = k, now
        if self.phase in ("startup", "vllm-init", "first-step"):
            self.phase = "steady"
        return self.progress(f"training step {k}", now)

    def set_phase(self, phase: str) -> None:
        if phase == "first-step" and self.steps:
            phase = "steady"
        self.phase = phase

    # ------------------------------------------------------------ decision
    def limit(self) -> tuple[float, str]:
        lim = self.limits
        p = self.phase
        if p in ("checkpoint-save", "teardown"):
            fixed = lim.checkpoint_save if p == "checkpoint-save" else lim.teardown
            if fixed is not None:
                return fixed, f"{p} limit"
            steady, basis = self._steady_limit()
            if lim.save_factor * steady >= lim.save_cap:
                return lim.save_cap, f"{p} limit (cap; {lim.save_factor:g} x the step limit, {basis})"
            name = "--hang-timeout" if basis == "--hang-timeout" else f"the step limit ({basis})"
            return lim.save_factor * steady, f"{lim.save_factor:g} x {name}"
        if p == "steady":
            return self._steady_limit()
        value = {"startup": lim.startup, "vllm-init": lim.vllm_init, "first-step": lim.first_step,
                 "eval": lim.eval}[p]
        return value, f"{p} limit"

    def _steady_limit(self) -> tuple[float, str]:
        lim = self.limits
        if lim.steady is not None:
            return lim.steady, "--hang-timeout"
        if self.slowest is None:
            return max(lim.steady_floor, lim.first_step), "no step time measured yet: the first-step limit"
        cal = lim.steady_factor * self.slowest
        if cal <= lim.steady_floor:
            return lim.steady_floor, (f"floor {lim.steady_floor:.0f} s (calibrated {lim.steady_factor:g} x slowest "
                                      f"step {self.slowest:.1f} s is below it)")
        return cal, f"{lim.steady_factor:g} x slowest step {self.slowest:.1f} s"

    def check(self, now: float | None = None) -> HangEvent | None:
        """A HangEvent the first time the silence passes the phase's limit; None otherwise."""
        if self.fired:
            return None
        now = self.clock() if now is None else now
        silent = now - self.last_t
        limit, basis = self.limit()
        if silent <= limit:
            return None
        self.fired = True
        return HangEvent(self.phase, silent, limit, basis, self.steps, self.last_what)
