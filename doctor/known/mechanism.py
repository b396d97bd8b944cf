"""Whether a known thread is about the same failure *mechanism* as a finding, not only similar words (issue 29 point 4).

A thread found by the index (doctor/known/index.py: exact signature or tf-idf similarity) gets a ``basis``:

- ``raise-site``: the thread's own error text and the finding's quoted error are raised at the same place of the same
  library: same package, same function, same file name (the raise-site index, doctor/classify/raise_sites.py; for
  the finding its ``raised_by``, or a lookup of its evidence lines when provenance gave none; for the thread its
  signatures, looked up lazily, once each).
- ``type-component-phase``: the raise site is not known on one side or both (a message the index does not hold:
  CUDA's out of memory, a user's reward function, a C++ error), and the thread's signature is the finding's error
  exactly (same exception type and same message once numbers and paths are masked: the same wording comes from the
  same component), and the phase of the run the thread names (weight sync, rollout, training step, saving...) is one
  the finding names too.
- ``similarity``: anything else, including two known raise sites that differ: words in common only.

Only a mechanism match (the first two) whose conditions hold in this run (doctor/known/fit.py: category, stated
``name=value``, upgrades and versions; the framework of the thread is the run's, or the raise site is in a library
every framework shares) and whose resolution is a whole sentence that stands on its own (``whole_sentence``) becomes a
"Known fix" step. Everything else is listed as a similar thread with its similarity score and never as a fix.
Pure apart from the raise-site index, read on first use.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .. import lazyre
from ..model import Finding
from .index import Match
from .normalise import short_type

RAISE_SITE = "raise-site"
TYPE_COMPONENT_PHASE = "type-component-phase"
SIMILARITY = "similarity"
BASES = (RAISE_SITE, TYPE_COMPONENT_PHASE, SIMILARITY)
MECHANISM = (RAISE_SITE, TYPE_COMPONENT_PHASE)
MIN_SITE_SCORE = 0.8   # as doctor/classify/provenance.py: a whole wording, or a paste cut after its literal text
MAX_EVIDENCE = 3

Site = tuple[str, str, str]  # (package, file name, function)


def _site(package: str, module: str, function: str) -> Site:
    return package, module.rsplit("/", 1)[-1], function


@lru_cache(maxsize=1024)
def sites_of(text: str) -> frozenset[Site]:
    """The raise sites of one error text: every indexed site that matches it well, of the packages that rank best
    (two when a package copies another's check: ms-swift 3.1-3.3 and trl's GRPOTrainer batch check)."""
    if len(text) < 12:
        return frozenset()
    try:
        from ..classify.raise_sites import best_sites
        from ..classify.site_rank import TIE
        keyed = best_sites(text[:1000], MIN_SITE_SCORE)
    except (OSError, ValueError):  # a missing or damaged index costs the basis, never the report
        return frozenset()
    if not keyed:
        return frozenset()
    top = keyed[0][0][:TIE]
    pkgs = {s.package for k, s in keyed if k[:TIE] == top}
    return frozenset(_site(s.package, s.module, s.where) for _, s in keyed if s.package in pkgs)


def _sig_text(typ: str, message: str) -> str:
    return f"{typ}: {message}" if typ else message


def thread_sites(m: Match) -> frozenset[Site]:
    out: frozenset[Site] = frozenset()
    for typ, message in m.signatures:
        out |= sites_of(_sig_text(typ, message))
    return out


def finding_sites(f: Finding) -> frozenset[Site]:
    if f.raised_by:
        return frozenset(_site(r.package, r.module, r.function) for r in f.raised_by)
    out: frozenset[Site] = frozenset()
    for e in f.evidence[:MAX_EVIDENCE]:
        out |= sites_of(e.text)
    return out


# the phase of a run a text names (thread: title, signatures, resolution; finding: message and evidence)
_PHASES: tuple[tuple[str, re.Pattern], ...] = tuple((name, lazyre.compile(rx, re.I)) for name, rx in (
    ("weight sync", r"move_model_batches|_move_model_to_vllm|update_named_param|load_weights|sync(?:ing)? (?:the )?"
                    r"weights|weight sync|wake_up|wak(?:e|ing) (?:up )?from sleep|sleep mode|offload_model"),
    ("rollout", r"\brollout\b|\bgenerat(?:e|es|ing|ion)\b|\bsampling\b|EngineCore|\binfer(?:ence)?\b"),
    ("training step", r"\bbackward\b|training_step|compute_loss|optimizer\.step|\bforward pass\b"),
    ("checkpoint save", r"save_model|_save_checkpoint|save_pretrained|\bsaving\b"),
    ("model loading", r"from_pretrained|load_model|loading (?:the )?(?:model|checkpoint|weights)"),
    ("evaluation", r"\bevaluat(?:e|ion)\b|evaluation_loop|\beval_dataset\b"),
))


def phases(texts: list[str]) -> frozenset[str]:
    hay = "\n".join(texts)
    return frozenset(name for name, rx in _PHASES if rx.search(hay))


def _types(texts: list[str]) -> set[str]:
    from ..classify.message import parse
    return {short_type(parse(t).exc_type) for t in texts if parse(t).exc_type}


def basis(m: Match, f: Finding) -> str:
    """How the thread is tied to the finding: RAISE_SITE, TYPE_COMPONENT_PHASE or SIMILARITY (module docstring)."""
    fs, ts = finding_sites(f), thread_sites(m)
    from ..classify.raise_sites import is_wrapper
    if any(is_wrapper(site[1], site[2]) for site in fs | ts):
        return SIMILARITY  # a wrapper's raise site is shared by every error it wraps
    if fs & ts:
        return RAISE_SITE
    if fs and ts:
        return SIMILARITY  # both raise sites known, and they differ
    if not m.exact:
        return SIMILARITY  # no raise site to compare, and another wording: the component is not shown to be one
    ev = [e.text for e in f.evidence[:MAX_EVIDENCE]]
    ftypes, ttypes = _types(ev), {short_type(t) for t, _ in m.signatures if t}
    if (ftypes or ttypes) and not ftypes & ttypes:
        return SIMILARITY
    want = phases([m.title, m.resolution, *(msg for _, msg in m.signatures)])
    if want and not want & phases([f.title, f.message, *ev]):
        return SIMILARITY  # the thread's failure happened in a phase this run does not show
    return TYPE_COMPONENT_PHASE


# ------------------------------------------------------------------ the framework of a thread
# repositories of a framework (a thread there is about that framework's trainer) and of a library every framework
# shares (a thread there is about the library, whichever trainer called it)
FRAMEWORK_REPOS = {"modelscope/ms-swift": "ms-swift", "huggingface/trl": "trl", "unslothai/unsloth": "unsloth",
                   "unslothai/notebooks": "unsloth", "verl-project/verl": "verl", "volcengine/verl": "verl",
                   "openrlhf/openrlhf": "openrlhf", "huggingface/open-r1": "open-r1",
                   "hiyouga/llamafactory": "llamafactory", "hiyouga/llama-factory": "llamafactory",
                   "primeintellect-ai/verifiers": "verifiers"}
SHARED = ("vllm", "vllm-ascend", "torch", "transformers", "deepspeed", "peft", "accelerate", "flash-attn",
          "flash_attn", "safetensors", "datasets")
SHARED_REPOS = {"vllm-project/vllm", "vllm-project/vllm-ascend", "pytorch/pytorch", "huggingface/transformers",
                "deepspeedai/deepspeed", "microsoft/deepspeed", "huggingface/peft", "huggingface/accelerate",
                "dao-ailab/flash-attention"}
# frameworks that run another's trainer: open-r1 runs trl's GRPOTrainer
_FAMILY = {"open-r1": "trl"}
# frameworks built on trl's trainers: a trl thread speaks of their runs too (not the other way round)
_BUILT_ON = {"unsloth": {"trl"}, "verifiers": {"trl"}}


def thread_framework(m: Match) -> str | None:
    """The framework a thread is about: its repository's, else the one its versions name; None for a library every
    framework shares or a project the table does not know."""
    repo = m.thread.split("#", 1)[0].lower()
    if repo in SHARED_REPOS:
        return None
    if repo in FRAMEWORK_REPOS:
        return FRAMEWORK_REPOS[repo]
    first = (m.versions.split() or [""])[0].strip(",").lower()
    return first if first in set(FRAMEWORK_REPOS.values()) else None


def _family(name: str) -> str:
    return _FAMILY.get(name, name)


def other_trainer(m: Match, run: dict[str, Any] | None) -> bool:
    """A similar thread about another trainer than the one the run is known to use (a run told only by its runtime,
    torch or vLLM, has no trainer to compare)."""
    if not isinstance(run, dict) or run.get("framework_source") in (None, "unknown", "runtime"):
        return False
    # by the repository alone: a thread elsewhere that names a trainer in its versions may still concern this run
    have, theirs = run.get("framework"), FRAMEWORK_REPOS.get(m.thread.split("#", 1)[0].lower())
    if not isinstance(have, str) or theirs is None:
        return False
    have, theirs = _family(have.lower()), _family(theirs)
    return theirs != have and theirs not in _BUILT_ON.get(have, ())


def framework_clash(m: Match, f: Finding, run: dict[str, Any] | None, how: str) -> str:
    """'' when the thread's framework is the run's (or either is unknown), or the raise site is in a shared library;
    else why not."""
    if not run or run.get("framework_source") == "unknown":
        return ""
    have, theirs = run.get("framework"), thread_framework(m)
    if not have or not theirs or _family(str(have).lower()) == _family(theirs):
        return ""
    if how == RAISE_SITE and {p for p, _, _ in finding_sites(f) & thread_sites(m)} & set(SHARED):
        return ""
    return f"the thread is about {theirs}, the run is {have}"


# ------------------------------------------------------------------ whole sentences
_END = lazyre.compile(r"""[.!?]["')\]`]*\s*$""")
_ABBREV_END = lazyre.compile(r"(?i)(?:\b(?:e\.g|i\.e|cf|vs|approx|incl)\.|\(\s*(?:e\.g|i\.e)\.?)\s*$")
_OUTSIDE = lazyre.compile(r"(?i)\b(?:see|as|matched|shown|listed|quoted|mentioned|described|linked|explained) "
                      r"(?:\w+ ){0,2}?(?:above|below)\b|\bthe (?:above|following|linked|attached)\b|\bsee (?:the )?"
                      r"(?:link|thread|comment|pr|issue|discussion|screenshot)s?\b|^(?:same as|ditto\b)"
                      r"|^(?:this|that|it)\s+(?:fix(?:es|ed)?|work(?:s|ed)?|help(?:s|ed)?|solv\w*|is|was|should|will|"
                      r"one|pr|change|patch|commit|solution|workaround)\b")
_URL = lazyre.compile(r"https?://\S+|\b(?:PR|pr|#)\s?#?\d+\b")
_TOOLS = frozenset("vllm trl torch deepspeed transformers peft accelerate unsloth pip conda swift ms-swift "
                   "math_verify nccl".split())


def whole_sentence(text: str) -> str:
    """'' when ``text`` can stand as a fix step on its own, else why not: cut (no final punctuation, an abbreviation or
    an open bracket at its end, a lowercase word where a sentence starts), pointing outside itself (see above, this
    thread, the link) or a link only."""
    s = " ".join(text.split())
    if not s:
        return "empty"
    if not _END.search(s) or _ABBREV_END.search(s):
        return "cut: no end of sentence"
    for a, b in ("()", "[]"):
        if s.count(a) > s.count(b):
            return "cut: an open bracket"
    if s.count("`") % 2:
        return "cut: an open code span"
    first = re.match(r"[^\s,;:]+", s)
    word = first.group(0) if first else ""
    if re.fullmatch(r"[a-z]+", word) and word not in _TOOLS:
        return "cut: starts inside a sentence"
    if _OUTSIDE.search(s):
        return "refers to something outside itself"
    if len(re.findall(r"[A-Za-z]{3,}", _URL.sub(" ", s))) < 4:
        return "a link or reference only"
    return ""
