"""One self-contained HTML file: the findings (in the order of the text report), then the run's curves with each
finding marked where it fired. Works offline: uPlot (vendored in render/assets, MIT, see VENDORED.md) and the
page's own script and style are inlined; a Content-Security-Policy forbids every request (``default-src 'none'``).

Safety: every input-derived string is HTML-escaped (``esc``: render.safe.clean, then escaped as html.escape with quotes does);
the chart data sits in a ``<script type="application/json">`` block written by ``json_for_script`` (render.safe's
JSON with ``<``, ``>``, ``&`` and U+2028/U+2029 as ``\\uXXXX``, so no ``</script>`` can close it) and is shown
by the script as canvas text or textContent only.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ..model import Report, Role, Severity, raised_lines
from . import charts as charts_mod
from . import run_line, runs_lines, vitals_line
from .safe import clean, json_dumps, wrap_mentions

_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
        "connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'")
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1140px;padding:16px 20px;
color:#1b1b1b;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555;font-size:12.5px;margin:2px 0}.finding{border:1px solid #ddd;border-left:6px solid #999;
border-radius:4px;padding:8px 12px;margin:10px 0}.finding.error{border-left-color:#c62828}
.finding.warning{border-left-color:#b26a00}.finding.info{border-left-color:#1565c0}
.sev{font-weight:700;text-transform:uppercase;font-size:12px;margin-right:6px}.error .sev{color:#c62828}
.warning .sev{color:#b26a00}.info .sev{color:#1565c0}.id{color:#555;font-size:12px;margin-left:6px}.conf{font-style:italic}
pre{background:#f6f6f6;padding:6px 8px;overflow-x:auto;font-size:12px;margin:4px 0;white-space:pre-wrap;
word-break:break-all}.lbl{font-weight:600;font-size:12.5px;margin-top:6px}.verdict{font-weight:600}
ul{margin:4px 0 4px 20px;padding:0}.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));
gap:8px 18px}.chart{margin:6px 0 10px;min-width:0}.chart h3{font-size:13px;margin:0 0 4px}
.single{font-size:13px;color:#333;background:#f6f6f6;padding:8px 10px;border-radius:4px}
.marks{font-size:12px;color:#444;margin:2px 0}.ok{color:#2e7d32;font-weight:700}.err{color:#c62828}
"""


def _escape(s: str) -> str:
    """html.escape(s, quote=True), the same replacements in the same order: the stdlib's html package imports
    html.entities (its 2,231-entry table, ~8 M instructions), a cost watch's every start paid for this function"""
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&#x27;"))


def esc(text: Any) -> str:
    """Input-derived text as HTML text: control, bidi and invisible characters shown escaped, then &, <, >, quotes
    escaped, and @mentions in <code> (GitHub never links a mention inside code, should the HTML be pasted there)."""
    return wrap_mentions(_escape(clean(text)), "<code>", "</code>")


def attr(text: Any) -> str:
    """Input-derived text in an attribute value or <title> (no markup there): escaped, nothing added."""
    return _escape(clean(text))


def json_for_script(obj: Any) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' (so no '</script>' or '<!--'), no U+2028/9."""
    s = json_dumps(obj, separators=(",", ":"))
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


_ASSETS = Path(__file__).resolve().parent / "assets"


@cache
def _asset(name: str) -> str:
    # the file beside this module, as an installed or checked-out package has it; importlib.resources (which imports
    # tempfile, random and zipfile: ~29 M instructions of every watch's start) only for a package that is not plain
    # files (a zip)
    path = _ASSETS / name
    if path.is_file():
        return path.read_text(encoding="utf-8")
    from importlib import resources
    return resources.files("doctor.render").joinpath("assets", name).read_text(encoding="utf-8")


def render(report: Report, title: str = "grpo-doctor report") -> str:
    series = report.series or {}
    charts = charts_mod.build(series) if series else []
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           f'<title>{attr(title)}</title>',
           f'<style>{_asset("uPlot.min.css")}{_CSS}</style></head><body>',
           f'<h1>{esc(title)}</h1>']
    head = "grpo-doctor " + report.tool_version
    summary = run_line(report.run)
    out.append(f'<p class="meta">{esc(head + (" · " + summary if summary else ""))}</p>')
    shown = ", ".join(i.path + (f" ({i.kind}: {i.note})" if i.note else f" ({i.kind})") for i in report.inputs)
    out.append(f'<p class="meta">inputs: {esc(shown)}</p>')
    listed = runs_lines(report)
    if listed:  # a folder of runs: one line per run, then each run's findings
        out.append(f'<p>{esc(listed[0])}</p><ul class="runs">'
                   + "".join(f"<li>{esc(line)}</li>" for line in listed[1:]) + "</ul>")
    vit = vitals_line(report.run) if not listed else ""
    if vit and report.findings:  # with no finding it follows "No problem found." instead
        out.append(f'<p class="meta">vitals: {esc(vit)}</p>')
    out.append('<h2>Findings</h2>')
    out += _findings(report)
    out.append('<h2>Curves</h2>')
    out += _charts_html(charts, series)
    data = {"charts": [{k: c[k] for k in ("title", "x", "series", "markers")} for c in charts]}
    out.append(f'<script type="application/json" id="grpo-data">{json_for_script(data)}</script>')
    out.append("<script>/* uPlot 1.6.32 (c) Leon Sorokin, MIT licence: https://github.com/leeoniya/uPlot */\n"
               f'{_asset("uPlot.iife.min.js")}</script>')
    out.append(f'<script>{_asset("report.js")}</script>')
    out.append('</body></html>')
    return "\n".join(out) + "\n"


def _findings(report: Report) -> list[str]:
    if not report.findings:
        vit = vitals_line(report.run)
        return ['<p class="ok">No problem found.</p>'] + ([f'<p class="vitals">Vitals: {esc(vit)}.</p>'] if vit else [])
    out = []
    for i, f in enumerate(report.findings, 1):
        extra = f.to_json()   # fields other helpers add (action, verify, known_issues): shown when present
        role = {Role.root: " (first cause)", Role.consequence: " (consequence)"}.get(f.role, "")
        bits = [esc(f.rule_id), esc(f.slug), esc(f.category), f'<span class="conf">{esc(f.confidence)}</span>']
        if f.alternatives:
            bits.append("also considered: " + esc(", ".join(f.alternatives)))
        if f.count > 1:
            bits.append(f"×{f.count}")
        if f.ranks:
            bits.append("ranks " + esc(",".join(map(str, f.ranks[:16]))) + ("…" if len(f.ranks) > 16 else ""))
        if f.run is not None:
            bits.append(esc(f.run.label()))
        out.append(f'<section class="finding {f.severity.name}" id="finding-{i}" data-rule="{attr(f.rule_id)}">')
        out.append(f'<div><span class="sev">{i}. {f.severity.name}</span><b>{esc(f.title)}</b>{esc(role)}'
                   f'<span class="id">{" · ".join(bits)}</span></div>')
        action = extra.get("action")
        if action:
            out.append(f'<p class="verdict">verdict: {esc(action)}</p>')
        out.append(f'<p>{esc(f.message)}</p>')
        if f.evidence:
            out.append('<div class="lbl">evidence</div><pre>' + "\n".join(
                esc(f"{e.path}{f':{e.line}' if e.line else ''}: {e.text}") for e in f.evidence) + '</pre>')
        for said in raised_lines(f.raised_by):  # doctor/classify/provenance.py
            out.append(f'<p class="meta">{esc(said)}</p>')
        # the known issues of a finding at error with evidence (known.for_finding looks up no other, so the modules
        # that load its index are not imported for a run whose findings are warnings)
        looked_up = f.severity == Severity.error and bool(f.evidence)
        if looked_up:
            from .. import known
        fixes = list(f.fix) + (known.fix_lines(f, report.run) if looked_up else [])  # the same failure mechanism only
        if fixes:
            out.append('<div class="lbl">fix</div><ul>' + "".join(f"<li>{esc(s)}</li>" for s in fixes) + "</ul>")
        for key in ("verify", "prevent"):
            if extra.get(key):
                out.append(f'<div class="lbl">{key}</div><p>{esc(extra[key])}</p>')
        threads = (("known issues", known.same_failure(f, report.run), known.describe),
                   ("similar threads (similar wording, not shown to be the same failure)", known.similar(f, report.run),
                    known.similar_line)) if looked_up else ()
        for label, shown, line in threads:
            if shown:
                out.append(f'<div class="lbl">{esc(label)}</div><ul>' + "".join(
                    f"<li>{esc(line(m))} ({esc(m.url)})</li>" for m in shown) + "</ul>")
        out.append('</section>')
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in Severity}
    out.append(f'<p class="meta">{counts[Severity.error]} error(s), {counts[Severity.warning]} warning(s), '
               f'{counts[Severity.info]} info.</p>')
    return out


def _charts_html(charts: list[dict[str, Any]], series: dict[str, Any]) -> list[str]:
    if not charts:
        return ['<p class="meta">No metric was logged (no logging.jsonl, printed metrics, TensorBoard events or GPU '
                'snapshot): nothing to draw.</p>']
    steps = series.get("steps") or {}
    out = [f'<p class="meta">{esc(_steps_line(steps, series))}</p>', '<div class="charts">']
    for i, c in enumerate(charts):
        out.append(f'<div class="chart" id="chart-{i}" data-keys="{attr(" ".join(c["keys"]))}">'
                   f'<h3>{esc(c["title"])}</h3><div class="plot"></div>')
        marks = [m for m in c["markers"] if m["finding"] is not None]
        if marks:
            out.append('<p class="marks">marked: ' + ", ".join(
                f'<a href="#finding-{m["finding"] + 1}">{esc(m["label"])}'
                f'{" at step " + esc(m["x"]) if m["x"] is not None and c["x"] == "step" else ""}</a>'
                for m in marks) + '</p>')
        out.append('</div>')
    out.append('</div>')
    return out


def _steps_line(steps: dict[str, Any], series: dict[str, Any]) -> str:
    if steps.get("last") is None:
        return "No train step was logged."
    text = f"{steps.get('rows')} logged step(s), steps {steps.get('first')}-{steps.get('last')}"
    if steps.get("max_steps"):
        text += f" of {steps['max_steps']}"
    end = series.get("log_end")
    if end:
        text += f"; the log {end.get('path')} ends at line {end.get('line')}"
    if series.get("downsampled"):
        text += f"; older steps downsampled to at most {series.get('max_points')} points per curve (minimum and maximum kept)"
    return text + "."


def watch_curves(session: Any) -> Any:
    """grpo-doctor watch's hook: record the live run's curves (a session observer) for write_watch_html."""
    from ..curves import Recorder
    rec = Recorder()
    session.observers.append(rec)
    return rec


def html_path(json_path: str) -> str:
    """Where watch's HTML page goes: beside its JSON report (``X.json`` -> ``X.html``)."""
    import os
    jp = os.fsdecode(json_path)
    return (jp[:-5] if jp.endswith(".json") else jp) + ".html"


def write_watch_html(json_path: str, report: Report, recorder: Any, session: Any) -> str | None:
    """The final report of watch as HTML (at ``html_path``); the path, or None when it could not be written (the
    run's exit status never depends on it)."""
    import dataclasses
    try:
        path = html_path(json_path)
        rep = dataclasses.replace(report, series=recorder.result(report.findings, session))
        from ..live.atomic import write_atomic  # as the JSON report: a link planted at the name is never followed
        write_atomic(path, render(rep, title="grpo-doctor watch report").encode("utf-8", "backslashreplace"))
    except Exception:  # noqa: BLE001 - a page that cannot be written must not cost the run's status
        return None
    return path
