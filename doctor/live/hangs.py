"""The hang side of `watch`: turn the watchdog's verdict into a hang report (stacks, process states, a GPU snapshot)
and, with --on-hang stop, stop the run's process group."""
from __future__ import annotations

import os

from .. import lazyre
from ..checks import _units as units
from ..model import InputInfo
from ..signals import HangReport
from ..sources.logtext import LineReader
from . import actions, integrations, stackgroups
from .atomic import write_atomic
from .rundir import console_name
from .say import say
from .watchdogs import PHASE_OF, PHASE_TEXT

_SAVE_TO = lazyre.compile(r"Saving model checkpoint to (\S+)")
# transformers' Trainer._save_checkpoint writes trainer_state.json after the weights, optimizer and RNG states: its
# presence in the folder the save line names is the save's own evidence that it ended
_SAVE_DONE = "trainer_state.json"


class Hangs:
    """Mixin of Watch (doctor/live/supervisor.py): the hang watchdog's ticks and reports (analyser thread)."""

    def _hang_tick(self, now: float) -> None:
        h = self.hang_rule
        if h is not None:
            phase, seq = h._last_phase()
            wp = PHASE_OF.get(phase, "steady" if h.p.max_step else "startup")
            if wp == "checkpoint-save" and h.p.max_step and (seq < getattr(self, "_ckpt_seq", 0)
                                                            or self._save_ended(h.p.phase_line.get(phase or ""))):
                # the checkpoint folder appeared after the save line, or the save it names ended: back to steps
                # (ms-swift 4.6 logs the line after the save, transformers before it)
                wp = "steady"
            if h.p.max_step:
                self.dog.step(h.p.max_step)
            total = h.p.total_steps
            ended = self.session.state.ended     # the run's end line: after its last save too
            if h.p.max_step and (ended or (wp not in ("checkpoint-save", "eval") and total and h.p.max_step >= total)):
                wp = "teardown"   # training is over: what is left is the final save and the processes' exit
            if wp != self.dog.phase:
                self.dog.set_phase(wp)
            n = len(h.p.vllm_lines)
            if n != getattr(self, "_vllm_n", 0):
                self._vllm_n = n
                if self.dog.steps or self.dog.phase in ("first-step", "steady"):
                    self.dog.progress("rollout line")
        steps = max(self.session.state.metrics_steps, self.dog.steps)
        if steps > self.dog.steps:
            self.dog.step(steps)
        if self.dog.resumed != getattr(self, "_resumed_seen", 0):
            self._resumed_seen = self.dog.resumed
            say(f"progress resumed ({self.dog.last_what}); the hang report above stays in the report")
        ev = self.dog.check(now)
        if ev is None or self.proc.poll() is not None:
            return
        self._on_hang(ev, now)

    def _save_ended(self, line) -> bool:
        """True when the checkpoint folder the save line names holds trainer_state.json; one stat a tick, only while
        the last phase marker is a save, and none once that line's save was seen ended."""
        if line is None:
            return False
        if getattr(self, "_save_done_seq", None) == line.seq:
            return True
        m = _SAVE_TO.search(line.text)
        if m is None:
            return False
        # a relative --output_dir is relative to the command's working directory, which is watch's own
        if not os.path.isfile(os.path.join(m.group(1).rstrip(".,;'\""), _SAVE_DONE)):
            return False
        self._save_done_seq = line.seq
        return True

    def _on_hang(self, ev, now: float) -> None:
        self.hang_reports += 1
        say(f"no progress for {units.secs(ev.silent_s)} s in {PHASE_TEXT[ev.phase]} (limit "
            f"{units.secs(ev.limit_s)} s, {ev.basis}); "
            "capturing stacks, process states and a GPU snapshot")
        procs = actions.process_tree(self.proc.pid)
        stacks, missing = actions.dump_stacks(procs)
        gpus = integrations.gpu_samples()
        where, where_text = actions.where_stopped(stacks)
        outlier = actions.outlier(stacks)
        grouped = stackgroups.culprit(stacks)
        if outlier is None and grouped:
            outlier = grouped
        fr_note = stackgroups.flight_recorder_note(self.env)
        if fr_note:
            missing = [*missing, fr_note]
        if not stacks and self.hang_rule is not None:
            phase, _ = self.hang_rule._last_phase()
            from ..checks.hang._progress import PHASE_TEXT as LOG_PHASES
            if phase:
                where_text = f"in {LOG_PHASES.get(phase, phase)} (from the log; no stacks)"
        base = console_name(self.node_rank, "hang")
        path = os.path.join(self.run_dir, f"{base}-{self.hang_reports}.txt")
        body = [f"grpo-doctor hang report {self.hang_reports}: no progress for {units.secs(ev.silent_s)} s in "
                f"{ev.phase} (limit {units.secs(ev.limit_s)} s: {ev.basis}); last progress: {ev.last_progress}", "",
                "== process states ==", actions.proc_text(procs), "", "== GPUs ==", actions.gpu_text(gpus), ""]
        if stacks:
            body += ["== stacks grouped ==", *([grouped] if grouped else []), stackgroups.grouped_text(stacks), ""]
        for s in stacks:
            body += [f"== py-spy dump: pid {s.pid} {s.label} ==", s.text.rstrip(), ""]
        if missing:
            body += ["== not captured ==", *missing, ""]
        try:
            # process names and stacks may hold undecodable bytes (surrogates); never written through a planted link
            write_atomic(path, ("\n".join(body) + "\n").encode("utf-8", "backslashreplace"))
            stacks_file = path
        except OSError:
            stacks_file = None
        if stacks and stacks_file:
            # the same text `analyze` will read from the run folder later: GD320/GD321 classify the frames too
            rd = LineReader(stacks_file, self.reader.counter)
            self.session.begin_log(stacks_file)
            for i, raw in enumerate(("\n".join(body)).encode().split(b"\n")):
                for line in rd.line(i + 1, raw):
                    self.session.feed_line(line)
            self.inputs.append(InputInfo(stacks_file, "log"))
        tail = self.session.state.tails.get(self.console_path)
        last_line = tail[-1] if tail else None
        stopping = self.o.on_hang == "stop"
        rep = HangReport(
            t=now - self.t0, phase=ev.phase, phase_text=PHASE_TEXT[ev.phase], silent_s=ev.silent_s, limit_s=ev.limit_s,
            limit_basis=ev.basis, steps=ev.steps, last_progress=ev.last_progress,
            last_line=last_line.raw if last_line else "", where=where,
            where_text=where_text, outlier=outlier,
            stacks=tuple(f"{s.label}: {s.top or 'no frames'}" for s in stacks if not s.launcher), stacks_file=stacks_file,
            missing=tuple(missing), gpu_text=actions.gpu_text(gpus), proc_text=actions.proc_text(procs), stopped=stopping,
            last_path=last_line.where.path if last_line else "<watch>", last_lineno=last_line.where.line if last_line else 0)
        self.session.emit(rep)
        self.hung = True
        report = self._report(final=False, hung=True)
        self._write_report(report)
        from ..render import text
        say(text.render(report, color=False))
        self._alert("hang", f"no progress for {units.secs(ev.silent_s)} s in {PHASE_TEXT[ev.phase]}"
                    + (f"; {where_text}" if where_text else "") + ("; stopping the run" if stopping else ""))
        for f in report.findings:
            self.printed[f.rule_id] = max(f.severity, self.printed.get(f.rule_id, f.severity))
        if stopping:
            say(f"stopping the run (--on-hang stop): SIGTERM to process group {self.pgid}, SIGKILL after "
                f"{self.o.grace:g} s")
            self.stopped = True
            actions.stop_group(self.pgid)
            self.kill_at = now + self.o.grace
