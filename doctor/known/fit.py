"""Whether a known thread's resolution fits this run, before it is shown as a fix step (issue 15 point 2).

A thread is shown under "known issues" when its error resembles the finding's; its resolution becomes a fix step only
when nothing the run shows contradicts it:
- the failure: the thread's category is the finding's, or its signature is the same message exactly (then the two
  curations only name one failure differently);
- its condition: a ``name=value`` the resolution or title states (trl#3199: ``num_generations=1``) is not contradicted
  by the run's own value of ``name`` (its arguments, or the finding's message and evidence, which quote the values
  read from the log);
- its component: an upgrade the resolution names is of a package the failure involves (vllm#3071's "fixed in vLLM
  0.3.2" is no fix for a watchdog timeout of the training ranks when nothing of the run shows vLLM);
- its stated release: a release the resolution or title says the failure belongs to ("A trl 0.25 regression",
  "(since v0.25.0)") is the run's when the log printed that package's version; when it printed none, the thread is
  one candidate, not a known fix for this run (``unshown``), as it is when the thread is about a trainer that nothing
  of the run shows;
- its transport: a thread about NCCL's InfiniBand (or P2P) transport is not this run's when the run turns that
  transport off (NCCL_IB_DISABLE=1), and a resolution that only sets environment variables the run already has is
  no fix for it;
- its versions: an upgrade the resolution names ("fixed in vLLM 0.3.2", "upgrade vLLM to 0.7.3") is not one the run
  already has: the version the log printed, the lowest release that holds the error's wording (raise-site index), or
  the floor the framework that ran requires (ms-swift README: vllm >= 0.5.1, doctor/checks/deps/_versions.py).
Pure: a Match, a Finding and the report's run object in, a bool out.
"""
from __future__ import annotations

import re
from typing import Any

from .. import lazyre
from ..claim_env import env_has
from ..model import Finding
from ..registry import CATEGORY_WORDS
from ..values import version_key
from .index import Match

# the lowest version of a package a framework's GRPO runs with (its README's dependency table)
FLOORS: dict[str, dict[str, str]] = {"ms-swift": {"vllm": "0.5.1"}}
_PKG = r"(vllm|trl|ms-swift|swift|transformers|deepspeed|torch|peft|accelerate|unsloth)"
_UPGRADE = lazyre.compile(r"(?i)\b(?:fixed in|(?:upgrad|updat)\w*\s+(?:(?P<p1>" + _PKG[1:-1] + r")\s+)?(?:\w+\s+){0,2}?to|>=)"
                      r"\s*(?P<p2>" + _PKG[1:-1] + r")?\s*v?(?P<v1>\d+\.\d+(?:\.\d+)?)"
                      r"|\b(?P<p3>" + _PKG[1:-1] + r")\s*v?(?P<v2>\d+\.\d+(?:\.\d+)?)\s*(?:or later|or newer|\+|fixes|fixed)")
_COND = lazyre.compile(r"\b([a-z][a-z_]{2,})\s*=\s*(\d+(?:\.\d+)?)\b")


def _pkg(name: str | None) -> str | None:
    if not name:
        return None
    name = name.lower()
    return "ms-swift" if name == "swift" else name


def run_floor(run: dict[str, Any], pkg: str) -> str | None:
    """The lowest version of ``pkg`` the run can have: printed, read from the wording, or the framework's floor."""
    ver = (run.get("versions") or {}).get(pkg)
    if ver:
        return str(ver)
    inferred = (run.get("inferred_versions") or {}).get(pkg)
    if isinstance(inferred, dict) and inferred.get("versions"):
        return str(inferred["versions"]).split(",")[0].split("-")[0]
    if run.get("framework_source") == "unknown":  # no framework detected: no floor to lean on
        return None
    return FLOORS.get(str(run.get("framework") or ""), {}).get(pkg)


def _upgrades(m: Match) -> list[tuple[str, str]]:
    """(package, version) pairs the resolution names as the fixed release; the package defaults to the thread's."""
    default = _pkg(m.versions.split()[0]) if m.versions else None
    out = []
    for g in _UPGRADE.finditer(m.resolution):
        pkg = _pkg(g.group("p1") or g.group("p2") or g.group("p3")) or default
        ver = g.group("v1") or g.group("v2")
        if pkg and ver:
            out.append((pkg, ver))
    return out


def _run_value(name: str, f: Finding, run: dict[str, Any]) -> str | None:
    val = (run.get("args") or {}).get(name)
    if val is not None and str(val).replace(".", "", 1).isdigit():
        return str(val)
    rx = re.compile(r"\b" + re.escape(name) + r"\b\s*[=:]?\s*\(?(\d+(?:\.\d+)?)\b")
    for text in (f.message, *(e.text for e in f.evidence)):
        mv = rx.search(text)
        if mv:
            return mv.group(1)
    return None


_EVERYWHERE = ("torch", "transformers", "accelerate")  # under every GRPO trainer


def _involved(pkg: str, f: Finding, run: dict[str, Any]) -> bool:
    """Whether the run shows ``pkg`` at all: the framework that ran, a version printed or read from the wording, the
    package that raised the quoted error, the evidence lines, the launch command or an argument named after it."""
    if pkg in _EVERYWHERE or pkg == run.get("framework") or pkg in (run.get("versions") or {}):
        return True
    if pkg in (run.get("inferred_versions") or {}) or any(rb.package == pkg for rb in f.raised_by):
        return True
    word = "swift" if pkg == "ms-swift" else pkg
    texts = [e.text for e in f.evidence] + [str(run.get("command") or "")] + list(run.get("args") or {})
    return any(word in t.lower() for t in texts)


_STATED = lazyre.compile(r"(?i)(?<![\w-])(?:(?P<pkg>" + _PKG[1:-1] + r")\s*v?(?P<v1>\d+\.\d+(?:\.\d+)?)"
                         r"|(?P<since>since|starting (?:with|from|in))\s+(?:(?P<pkg2>" + _PKG[1:-1]
                         + r")\s*)?v?(?P<v2>\d+\.\d+(?:\.\d+)?))")


def stated(m: Match) -> list[tuple[str, str, bool]]:
    """(package, release, and whether it is a lower bound) of the releases the thread's title or resolution ties the
    failure to ("A trl 0.25 regression", "(since v0.25.0)"), less the releases it names as the fix (``_upgrades``)."""
    default = _pkg(m.versions.split()[0].strip(",")) if m.versions else None
    out: list[tuple[str, str, bool]] = []
    for text in (m.resolution, m.title):
        fixed = [g.span() for g in _UPGRADE.finditer(text)]
        for g in _STATED.finditer(text):
            if any(a <= g.start() < b for a, b in fixed):
                continue
            pkg = _pkg(g.group("pkg") or g.group("pkg2")) or default
            ver = g.group("v1") or g.group("v2")
            if pkg in _PKGS and ver and (pkg, ver, bool(g.group("since"))) not in out:
                out.append((pkg, ver, bool(g.group("since"))))
    return out


_PKGS = frozenset({"vllm", "trl", "ms-swift", "transformers", "deepspeed", "torch", "peft", "accelerate", "unsloth"})


def _holds(have: str, want: str, lower: bool) -> bool:
    if lower:
        return version_key(have) >= version_key(want)
    n = len(version_key(want))
    return version_key(have)[:n] == version_key(want)[:n]


def unshown(m: Match, f: Finding, run: dict[str, Any] | None) -> str:
    """'' when nothing the thread's fix depends on is missing from the run; else what the log does not show (then the
    resolution is one candidate, not a known fix): the thread's trainer, for a run whose trainer is not told, or the
    version of a package the thread ties the failure to."""
    from .mechanism import _told_trainer, shows, thread_framework
    theirs = thread_framework(m)
    missing = theirs if theirs and isinstance(run, dict) and _told_trainer(run) is None \
        and not shows(theirs, f, run) else None
    for pkg, ver, lower in stated(m):
        if not ((run or {}).get("versions") or {}).get(pkg):
            what = f"{pkg} {ver}{' or later' if lower else ''}"
            return (f"the thread is about {what}, and this log shows no {pkg}" if pkg == missing else
                    f"the thread is about {what}, and this log shows no {pkg} version")
    return f"the thread is about {missing}, which this log does not show" if missing else ""


def why_not(m: Match, f: Finding, run: dict[str, Any] | None) -> str:
    """'' when the resolution fits the run, else what contradicts it (for tests and the bench)."""
    if m.category != f.category and not m.exact:
        return (f"the thread is about {CATEGORY_WORDS.get(m.category, m.category)}, this failure is "
                f"{CATEGORY_WORDS.get(f.category, f.category)}")
    if run is None:
        return ""
    for g in _COND.finditer(f"{m.title} {m.resolution}"):
        name, want = g.group(1), g.group(2)
        have = _run_value(name, f, run)
        if have is not None and float(have) != float(want):
            return f"the thread is about {name}={want}, the run has {name} {have}"
    transport = _transport_off(m, run)
    if transport:
        return transport
    stage = _stage_of(f"{m.title} {m.versions}")
    ran = str(run.get("trainer") or "").lower()
    if stage and ran and ran != stage:
        return f"the thread is about a {stage.upper()} run, this run is {ran.upper()}"
    for pkg, ver, lower in stated(m):
        have = (run.get("versions") or {}).get(pkg)
        if have and not _holds(str(have), ver, lower):
            return f"the thread is about {pkg} {ver}{' or later' if lower else ''}, the run has {pkg} {have}"
    for pkg, ver in _upgrades(m):
        if not _involved(pkg, f, run):
            return f"the resolution upgrades {pkg}, which nothing of this failure involves"
        floor = run_floor(run, pkg)
        if floor and version_key(floor) >= version_key(ver):
            return f"the resolution's {pkg} {ver} is older than the run's {pkg} (at least {floor})"
    return ""


# a thread whose failure or repair was NCCL's InfiniBand (or peer-to-peer) transport, and the switch that turns that
# transport off (NCCL's environment variables): a run that has it off cannot have that thread's cause
_TRANSPORTS = ((lazyre.compile(r"(?i)\binfiniband\b|\bIB (?:links?|network|cards?|ports?|problems?|issues?)\b|\bRoCE\b|\bRDMA\b"),
                "NCCL_IB_DISABLE", "InfiniBand"),
               (lazyre.compile(r"(?i)\bP2P\b|peer[- ]to[- ]peer|\bNVLink\b"), "NCCL_P2P_DISABLE", "peer-to-peer (P2P)"))
_ENV_SETTING = lazyre.compile(r"\b([A-Z][A-Z0-9_]{2,})=([^\s,;()`'\"]+)")


def _transport_off(m: Match, run: dict[str, Any]) -> str:
    """What the run's environment says against the thread: its cause is a transport the run turned off, or its
    resolution is an environment setting the run already has."""
    env = run.get("env") or {}
    text = f"{m.title} {m.resolution} {m.versions}"
    for rx, name, what in _TRANSPORTS:
        if str(env.get(name, "")).strip().lower() in ("1", "true", "yes") and rx.search(text) and \
                f"{name}=1" not in m.resolution:
            return f"the thread is about NCCL's {what} transport, and the run turns it off ({name}={env[name]})"
    settings = _ENV_SETTING.findall(m.resolution)
    if settings and all(env_has(env, k, v) is not None for k, v in settings):
        return ("the resolution sets " + ", ".join(f"{k}={v.rstrip('.')}" for k, v in settings)
                + ", which the run already has")
    return ""


# the kind of training a thread states ("stage pt", LLaMA-Factory's stages; "pre-training"): a resolution of one kind
# (pre-training's blocks of cutoff_len tokens) is no way out for a run of another (trainer_kind.py's kinds)
_STAGE = lazyre.compile(r"(?i)\bstage[ :=]+(pt|sft|rm|ppo|dpo|kto)\b|\b(pre-?training)\b")


def _stage_of(text: str) -> str | None:
    m = _STAGE.search(text)
    if m is None:
        return None
    return "pt" if m.group(2) else m.group(1).lower()


def fits(m: Match, f: Finding, run: dict[str, Any] | None) -> bool:
    return not why_not(m, f, run)
