"""Findings and the JSON report of `watch`: live evaluation, the report file (atomic), the final diagnosis."""
from __future__ import annotations

import time

from .. import __version__
from ..engine import order
from ..model import Report, Severity
from .atomic import write_atomic
from .say import say

# post-mortem rules that read "the log stops here" as a hang: meaningless while the process is alive
_POSTMORTEM_ONLY = {"GD320", "GD321"}


class Reporting:
    """Mixin of Watch (doctor/live/supervisor.py)."""

    def _framework(self, final: bool) -> dict:
        """The framework as analyze detects it (the heads of the logs are read for the final report only: a file read
        at every refresh would cost the run CPU)."""
        from ..run_terms import framework_of
        return framework_of(self.session, list(self.inputs) if final else None)

    def _findings(self, final: bool, hung: bool = False) -> list:
        # a live evaluation of a session that took no input since the last one gives the same findings (Session.finish
        # is a function of what was fed: finishing twice gives the same, checked on every golden log), so the last
        # ones are reused: a run that prints nothing for a while (a hang, a long load) costs no evaluation every 5 s
        live = not final and not hung and not getattr(self, "hung", False)
        key = (self.session.generation, len(self.extra), len(self.checkpoints_seen)) if live else None
        memo = getattr(self, "_live_memo", None)
        if key is not None and memo is not None and memo[0] == key:
            self.report_framework = memo[2]
            return list(memo[1])
        self._live_memo = None
        self.report_framework: dict | None = None  # detected once after the versions are narrowed; _report reuses it
        try:
            # where the errors come from (doctor/classify/provenance.py), as analyze does
            from ..classify import provenance
            memo = getattr(self, "_provenance_memo", None)
            if memo is None:
                memo = self._provenance_memo = {}
            prov = provenance.for_session(self.session, memo)
            self.session.run.inferred_versions = prov.narrow()
            # the checkpoint rules' findings (each checkpoint checked as it was saved) join the rules' own: ordered
            # and given a verdict with them, against every checkpoint watch saw (a cut checkpoint-4 leaves
            # checkpoint-2 to resume from), and seen by the fallbacks (GD995 is for a failure no rule explains)
            found = prov.annotate(self.session.finish(outside=self.extra, checkpoints=self.checkpoints_seen))
            # the fixes in the terms of the framework that ran (doctor/swift/terms.py), detected as analyze detects it
            from ..run_terms import in_run_terms
            self.report_framework = self._framework(final)
            found = in_run_terms(found, self.report_framework)
        except Exception as e:  # noqa: BLE001 - a broken rule costs its findings, never the report
            self._analysis_failed(e)
            found = order(list(self.extra))
            key = None   # evaluated again next time, as before: each failure counts toward ERRORS_MAX
        if live:
            found = [f for f in found if f.rule_id not in _POSTMORTEM_ONLY]
        if key is not None:
            self._live_memo = (key, list(found), self.report_framework)
        return found

    def _evaluate(self, final: bool, found: list | None = None) -> None:
        """Say each finding at warning or above once (again when its severity rises); ``found``: the findings of this
        moment when the caller has them already (the report refreshed in the same tick)."""
        for f in (self._findings(final) if found is None else found):
            if f.severity < Severity.warning:
                continue
            prev = self.printed.get(f.rule_id)
            if prev is not None and prev >= f.severity:
                continue
            self.printed[f.rule_id] = f.severity
            if f.severity >= Severity.error and self.first_error_time is None:
                self.first_error_time = time.time()
                self._alert("error", f"error {f.rule_id} {f.title}: {f.message}")
            ev = f" [{f.evidence[0].text[:160]}]" if f.evidence else ""
            say(f"{f.severity.name} {f.rule_id} {f.title}: {f.message}{ev}")
            if f.fix:
                say(f"  fix: {f.fix[0]}")

    def _run_info(self, status: str, code: int | None, final: bool = False, framework: dict | None = None) -> dict:
        info = self.session.run.summary() if self.session is not None else {
            "framework": None, "framework_version": None, "args": {}, "world_size": None}
        if self.session is not None:
            from ..classify.provenance import summarize
            # the framework as analyze detects it (the command, frames, log lines, versions), not RunConfig's
            # "ms-swift" default: a TRL script under watch was reported as ms-swift
            info.update(framework or self._framework(final))
            summarize(info, self.session.run.inferred_versions)
        sampled = self.gpus.result() if getattr(self, "gpus", None) is not None else None
        if sampled is not None:
            info["gpus"] = sampled
        info.update({
            "node_rank": self.node_rank, "host": self.host,
            "watch": {"status": status, "exit_code": code, "pid": self.proc.pid if self.proc else None,
                      "argv": self.argv, "started": getattr(self, "wall0", None), "updated": time.time(),
                      "first_error_time": self.first_error_time, "console_log": getattr(self, "console_path", None),
                      "stopped_by_watch": self.stopped, "attempt": getattr(self, "attempt", 1),
                      "earlier_launches": getattr(self, "archived", []),
                      "analysis_skipped_bytes": self.skipped_bytes, "analysis_error": self.analysis_error,
                      "console_log_incomplete_from": getattr(getattr(self, "console", None), "failed_at", None),
                      "survivors": self.survivors},
        })
        return info

    def _report(self, final: bool, hung: bool = False, found: list | None = None) -> Report:
        findings = self._findings(final, hung) if found is None else found
        if self.first_error_time is None and any(f.severity >= Severity.error for f in findings):
            self.first_error_time = time.time()
        info = self._run_info(self.status, getattr(self, "exit_code", None), final, self.report_framework)
        return Report(__version__, list(self.inputs), info, findings)

    def _alert(self, event: str, text: str) -> None:
        """--notify / --notify-cmd (doctor/live/notify.py); never raises, never waits."""
        n = getattr(self, "notifier", None)
        if n is None:
            return
        try:
            if event == "error":
                self._write_report(self._report(final=False))  # --notify-cmd reads the report: let it hold the error
            where = f"node {self.node_rank} " if self.node_rank is not None else ""
            n.alert(event, f"grpo-doctor watch ({where}{self.host}, {self.run_dir}): {text}", self.report_path)
        except Exception as e:  # noqa: BLE001 - an alert never affects the run
            say(f"--notify: the alert could not be sent ({type(e).__name__}: {e})")

    def _final_report(self, rc: int) -> Report:
        """The report at the end. A command that failed by itself also feeds GD995 (the exit is a finding when no
        rule names a cause) and, when SIGKILL ended it, the kernel log's OOM lines (GD310 reads them)."""
        if rc != 0 and not self.stopped and not self.analysis_off:
            import signal as _signal

            from ..signals import RunExit
            name = None
            if rc < 0:
                try:
                    name = _signal.Signals(-rc).name
                except ValueError:
                    name = None
            lines: list[str] = []
            note = None
            if rc == -_signal.SIGKILL:
                from .exits import kernel_oom_lines
                lines, note = kernel_oom_lines(self.pids, getattr(self, "wall0", time.time()))
                if lines:
                    self._guard(self._feed_kernel_lines, lines)
            self._guard(self.session.emit, RunExit(self.clock() - self.t0, rc, name, tuple(lines), note))
        return self._report(final=True)

    def _feed_kernel_lines(self, lines: list[str]) -> None:
        from ..sources.logtext import LineReader
        rd = LineReader("<kernel log>", self.reader.counter)
        self.session.begin_log("<kernel log>")
        for i, text in enumerate(lines):
            for line in rd.line(i + 1, text.encode("utf-8", "replace")):
                self.session.feed_line(line)

    def _write_report(self, rep: Report) -> None:
        """Atomic (doctor/live/atomic.py: tmp + rename); any value (NaN, bytes of a non-UTF-8 argument) is written validly by render.safe;
        on any failure the tmp file is removed and the run's exit status is untouched."""
        from ..render.safe import json_dumps
        try:
            data = (json_dumps(rep.to_json(), indent=2) + "\n").encode("utf-8", "backslashreplace")
            write_atomic(self.report_path, data)  # a link planted at the name is replaced, never written through
        except Exception as e:  # noqa: BLE001 - a report that cannot be written must not cost the child's status
            say(f"{self.report_path}: cannot write the report ({getattr(e, 'strerror', None) or e})")

    def _final_say(self, rep: Report, rc: int, code: int) -> None:
        import signal as _signal
        try:
            signame = f" ({_signal.Signals(-rc).name})" if rc < 0 else ""
        except ValueError:
            signame = ""
        how = (f"stopped by grpo-doctor (exit {code})" if self.stopped else
               f"exited with status {rc}" if rc >= 0 else f"was killed by signal {-rc}{signame} (exit {code})")
        bad = [f for f in rep.findings if f.severity >= Severity.warning]
        if rc != 0 or self.stopped or any(f.severity >= Severity.error for f in bad):
            from ..render import text
            shown = [f for f in rep.findings if f.severity >= Severity.warning
                     and self.printed.get(f.rule_id, Severity.info) >= f.severity]
            if self.hang_reports and len(shown) == len(bad):
                # the hang report printed this diagnosis already: do not print it twice
                say(f"the run {how}; diagnosis: as in the hang report above ("
                    + ", ".join(f"{f.rule_id} {f.title}" for f in bad) + ")")
            else:
                say(f"the run {how}; diagnosis:")
                say(text.render(rep, color=False))
        else:
            say(f"the run {how}; " + (f"{len(bad)} warning(s): " + ", ".join(f"{f.rule_id} {f.title}" for f in bad)
                                       if bad else "no findings at warning or above"))
        failed_at = getattr(getattr(self, "console", None), "failed_at", None)
        if failed_at is not None:
            say(f"{self.console_path}: incomplete from byte {failed_at} on ({self.console.error})")
        if self.skipped_bytes:
            say(f"the live analysis skipped {self.skipped_bytes} bytes to keep up"
                + (f"; the console log has them all: run `grpo-doctor analyze {self.run_dir}` for a diagnosis of every "
                   "line" if failed_at is None else "; the console log is incomplete too (above)"))
        if getattr(self, "report_written", True):
            say(f"report: {self.report_path}")
        else:
            say(f"the final report was not written ({self.report_path}: see above); the diagnosis printed above is "
                "its only copy")
