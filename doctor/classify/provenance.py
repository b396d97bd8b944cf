"""Where the errors of a run come from (issue 14 point 3): a post-pass over the findings, like doctor/verdict.py.

- ``narrow``: before the rules finish, the releases of ms-swift, trl and vLLM that hold the wording of the run's
  exceptions, for each of those packages whose version the log did not print (``run.inferred_versions``: the
  fixes that name flags by version read it through doctor/swift/run.py).
- ``annotate``: after, each finding that quotes an exception (an evidence line that is a parsed exception's
  line), or an error log line the index knows, gets ``raised_by``: the best raise site of each
  (doctor/classify/site_rank.py), e.g. trl 0.15-0.16 ``GRPOTrainer.__init__`` (trl/trainer/grpo_trainer.py).
- ``summarize``: the run object's ``inferred_versions`` ({"ms-swift": {"versions": "3.6-3.11", "from": "the
  wording of the error"}}), which the text and markdown headers show as "ms-swift 3.6-3.11 (from the wording of
  the error)".

The index (doctor/data/raise_sites.idx) is read only when the run has an exception or a finding quotes an error
line: a healthy log never loads it. A lookup costs well under a millisecond once its buckets are read.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..confidence import by_raise_site
from ..model import Finding, RaisedBy
from ..signals import ExceptionInfo
from ..sources.swiftconfig import RunConfig
from .message import parse
from .site_rank import MATCH, TIE

NARROWED = ("ms-swift", "trl", "vllm")  # the packages whose version a run summary names
FROM = "the wording of the error"
MIN_SCORE = 0.8        # a whole wording, or a paste cut short after all of its literal text
MAX_LOOKUPS = 16       # distinct messages looked up by each pass (a log of 200 exceptions repeats a few)
MAX_TEXT = 1000        # characters of a message looked up (a longer one is read as a paste cut there)
MAX_PER_FINDING = 3    # raised_by entries of one finding
EVIDENCE_READ = 8      # evidence lines of one finding read for exceptions and error lines
_ERROR_LEVELS = ("error", "critical")
# wordings that a package outside the index raises too: an indexed site matching one names its package only when a
# frame confirms it (torch/nn/modules/module.py Module.load_state_dict raises "Error(s) in loading state_dict for
# {class}:" for every nn.Module, transformers' loader the same words for its models)
_SHARED_WITH_TORCH = ("Error(s) in loading state_dict for",)

# framework (doctor/swift/framework.py) -> the packages its errors most likely come from
_PREFER = {"ms-swift": ("ms-swift", "trl"), "trl": ("trl",), "unsloth": ("trl",), "verifiers": ("trl",),
           "open-r1": ("trl",)}


def for_session(session: Any, memo: dict | None = None) -> Provenance:
    """The provenance pass of a Session (analyze and watch alike, so that both give the same findings): its
    exceptions, and the packages that the framework read from the same session (frames, commands, last lines)
    points at. ``memo``: lookups kept from an earlier pass over the same run (watch evaluates again and again)."""
    prefer: tuple[str, ...] = ()
    state = session.state
    if state.exceptions:
        name = state.framework()[0]
        prefer = _PREFER.get(name or "", ())
    return Provenance(state.exceptions, state.run, prefer, memo)


class Provenance:
    """The raise sites of one run's messages: each distinct message looked up once."""

    def __init__(self, exceptions: list[ExceptionInfo], run: RunConfig, prefer: tuple[str, ...] = (),
                 memo: dict | None = None):
        self.exceptions = exceptions
        self.run = run
        self.prefer = prefer
        self._memo: dict[tuple, list] = {} if memo is None else memo
        self._budget = MAX_LOOKUPS
        self._where = {(e.where.path, e.where.line): e for e in exceptions}

    def _sites(self, text: str, frames: tuple[str, ...] = ()) -> list[tuple[tuple, Any]]:
        """(rank key, site) best first (raise_sites.best_sites)."""
        text = text[:MAX_TEXT]
        key = (text, frames, self.prefer, tuple(sorted(self.run.versions.items())))
        got = self._memo.get(key)
        if got is None:
            if self._budget <= 0:
                return []
            self._budget -= 1
            from .raise_sites import best_sites
            try:
                got = best_sites(text, MIN_SCORE, frames=frames, prefer=self.prefer, known=self.run.versions)
            except (OSError, ValueError):  # a missing or damaged data file costs the provenance, not the report
                got = []
            self._memo[key] = got
        return got

    def _of_exception(self, e: ExceptionInfo) -> list[tuple[tuple, Any]]:
        return self._sites(f"{e.type}: {e.message}", tuple(f.path for f in e.frames))

    # ------------------------------------------------------------------ before the rules finish
    def narrow(self) -> dict[str, str]:
        """Package -> releases holding the wording of every exception it raised (NARROWED packages whose version
        the log did not print; a package whose exceptions disagree is left out)."""
        ranges: dict[str, list[str]] = {}
        seen: set[tuple[str, str]] = set()
        for e in self.exceptions:
            if (e.type, e.message) in seen or not e.message:
                continue
            seen.add((e.type, e.message))
            keyed = self._of_exception(e)
            best = _pick(keyed)
            if len(best) != 1 or best[0].package not in NARROWED or best[0].package in self.run.versions:
                continue  # nothing matched, a tie between packages, or a version the log printed
            ranges.setdefault(best[0].package, []).append(_held(keyed))
        if not ranges:
            return {}
        from .raise_sites import all_releases, intersect
        out = {}
        for pkg, rs in sorted(ranges.items()):
            both = intersect(pkg, rs)
            if both and both != all_releases(pkg):  # every release: nothing learnt
                out[pkg] = both
        return out

    # ------------------------------------------------------------------ after
    def annotate(self, findings: list[Finding]) -> list[Finding]:
        """Each finding with ``raised_by`` for the exceptions and error lines it quotes."""
        self._budget = MAX_LOOKUPS  # its own budget: what narrow looked up is remembered, not counted again
        return [self._one(f) for f in findings]

    def _one(self, f: Finding) -> Finding:
        out: list[RaisedBy] = []
        for ev in f.evidence[:EVIDENCE_READ]:
            exc = self._where.get((ev.path, ev.line))
            keyed = self._of_exception(exc) if exc is not None and exc.message else self._of_line(ev.text)
            funcs = tuple(fr.func for fr in exc.frames) if exc is not None else ()
            picked = _pick(_by_frame(keyed, funcs))
            if not picked:   # no site: the index's modules not imported for it (a metric row, a warning line)
                continue
            if len({x.package for x in picked}) > 1:
                # packages that raise the same words: the ones this run shows (a frame in its folder, a version
                # printed, the framework that ran) over those it shows nowhere ("raised by ms-swift" for a
                # LLaMA-Factory run that only went through transformers would be false)
                paths = tuple(fr.path.replace("\\", "/") for fr in exc.frames) if exc is not None else ()
                shown_here = [x for x in picked if _shown(x.package, paths, self.run.versions, self.prefer)]
                picked = shown_here or picked
            from .raise_sites import open_below
            for s in picked:
                shown = open_below(s.package, s.versions)
                rb = RaisedBy(s.package, s.versions, s.module, s.where, s.kind, shown,
                              scope(s, shown, funcs, ev.text, self.run.versions), s.condition)
                if rb.scope == "package" and any(w in ev.text for w in _SHARED_WITH_TORCH):
                    continue  # torch raises the same words: the package is not known either
                said = any(o.package == rb.package and o.scope == rb.scope == "package" for o in out)
                if rb not in out and not said and len(out) < MAX_PER_FINDING:
                    out.append(rb)
            if len(out) >= MAX_PER_FINDING:
                break
        if not out:
            return f
        raised = tuple(out)
        return replace(f, raised_by=raised, confidence=by_raise_site(f, raised))

    def _of_line(self, text: str) -> list[tuple[tuple, Any]]:
        """An evidence line that is not a parsed exception: an exception named in it, or an error log line."""
        msg = parse(text[:MAX_TEXT])
        if len(msg.text) < 8 or not (msg.exc_type or msg.level in _ERROR_LEVELS):
            return []
        if msg.exc_type and not msg.text:
            return []
        return self._sites(text)


# an indexed package -> the folder its frames are in
_FOLDER = {"ms-swift": "/swift/"}


def _shown(package: str, paths: tuple[str, ...], versions: dict[str, str], prefer: tuple[str, ...]) -> bool:
    """The run shows ``package``: a frame in its folder, a version of it printed, or a framework that uses it."""
    folder = _FOLDER.get(package, f"/{package}/")
    return package in versions or package in prefer or any(folder in "/" + p for p in paths)


def _short(func: str) -> str:
    return func.rsplit(".", 1)[-1].strip("<>")


def _by_frame(keyed: list[tuple[tuple, Any]], funcs: tuple[str, ...]) -> list[tuple[tuple, Any]]:
    """``keyed`` with, among sites the evidence ranks alike, the one whose function is the traceback's raising frame
    first, then one whose function is another frame of it (ms-swift's MaxLengthError is raised in `Template._encode`
    in 3.0-3.2 and in `Template._encode_truncated` from 3.4: a stack that shows `_encode_truncated` says which)."""
    if not funcs or len(keyed) < 2:
        return keyed
    last, seen = _short(funcs[-1]), {_short(fn) for fn in funcs}

    def by(k: tuple[tuple, Any]) -> tuple:
        fn = _short(k[1].where)
        return (k[0][:TIE], 0 if fn == last else 1 if fn in seen else 2)
    return sorted(keyed, key=by)


def _in_range(package: str, version: str, shown: str) -> bool:
    """Whether the release ``version`` of ``package`` (as the log printed it) is one of ``shown`` (a range text of
    minor releases, "<=0.12" open below), or newer than every release read when the range reaches the newest one."""
    from ..values import minor, version_key
    from .raise_sites import index
    try:
        labels = [minor(v) for v in index().meta["versions"].get(package, [])]
    except (OSError, ValueError):
        return True
    have = version_key(minor(version))
    for part in shown.split(","):
        lo, _, hi = part.removeprefix("<=").partition("-")
        hi = hi or lo
        if (part.startswith("<=") or version_key(lo) <= have) and have <= version_key(hi):
            return True
        if labels and hi == labels[-1] and have > version_key(hi):
            return True  # newer than the newest release read: not ruled out
    return False


def scope(s: Any, shown: str, funcs: tuple[str, ...], line: str, versions: dict[str, str]) -> str:
    """What the run confirms of the site ``s`` (model.RaisedBy.scope): '' its releases and function, 'function' its
    function only, 'package' neither. The function is confirmed when a frame of the traceback is that function (a
    log line without a traceback: when it names the site's file, `[core_client.py:564]`); the releases when the log
    printed the package's version and it is inside them. A version printed outside them, or a traceback whose frames
    are other functions, leaves the package only."""
    ver = versions.get(s.package)
    if ver and not _in_range(s.package, ver, shown):
        return "package"
    if funcs:
        ok = _short(s.where) in {_short(fn) for fn in funcs}
    else:
        base, dotted = s.module.rsplit("/", 1)[-1], s.module.removesuffix(".py").replace("/", ".")
        ok = bool(base) and (f"{base}:" in line or f"{dotted}:" in line)  # `[api.py:869]`, `ERROR:torch.distr...api:`
    if not ok:
        return "package"
    return "" if ver else "function"


def _pick(keyed: list[tuple[tuple, Any]]) -> list:
    """The best site, and the best of each other package that no evidence ranks below it (a tie: trl's
    GRPOTrainer check and ms-swift 3.1-3.3's copy of it, in a log that shows no stack and names no framework)."""
    if not keyed:
        return []
    top = keyed[0][0][:TIE]
    out, pkgs = [], set()
    for k, s in keyed:
        if k[:TIE] != top:
            break
        if s.package not in pkgs:
            pkgs.add(s.package)
            out.append(s)
    return out


def _held(keyed: list[tuple[tuple, Any]]) -> str:
    """The releases of the best site's package that hold the wording: its sites that match as well as the best
    one (exception type, place in the stack, literal text, score), whatever their file."""
    from .raise_sites import narrow_versions
    best_key, best = keyed[0]
    same = [s for k, s in keyed if s.package == best.package and k[:MATCH] == best_key[:MATCH]]
    return narrow_versions(same).get(best.package, best.versions)


def summarize(run: dict[str, Any], inferred: dict[str, str]) -> None:
    """The run object's ``inferred_versions`` (additive to schema 1)."""
    if inferred:
        from .raise_sites import open_below
        run["inferred_versions"] = {}
        for pkg, r in sorted(inferred.items()):
            entry = {"versions": r, "from": FROM}
            shown = open_below(pkg, r)
            if shown != r:   # the range starts at the oldest release read: older ones are not ruled out
                entry["shown"] = shown
            run["inferred_versions"][pkg] = entry


__all__ = ["FROM", "Provenance", "for_session", "summarize"]
