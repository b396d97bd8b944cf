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

Neither is ever found from a launcher's or wrapper's own line (``launcher_line``: torchrun's ``failed (exitcode: N)
local_rank``, its closing-signal lines, a ``RayTaskError(...)`` header, ``ChildFailedError``, vLLM's engine-core
monitor): every child failure is reported there in the same words, so the words say nothing of the cause. A message
that names no component (``generic``: torch's tensor-shape and index checks, a ``KeyError`` whose key is masked) is
never the same component on its wording alone. A similar thread must still be the same kind of error (``same_kind``:
the exception type, the signal or exit code, the names quoted), and is left out when it is about another trainer
(``other_trainer``: also when the run's trainer is not told and the log shows nothing of the thread's).

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
    try:
        return _sites_of(text)
    except (OSError, ValueError):  # a missing or damaged index costs the basis, never the report
        return frozenset()


def _sites_of(text: str) -> frozenset[Site]:
    """``sites_of`` without its guard: raises OSError or ValueError when the raise-site index cannot be read."""
    if len(text) < 12:
        return frozenset()
    from ..classify.raise_sites import best_sites
    from ..classify.site_rank import TIE
    keyed = best_sites(text[:1000], MIN_SITE_SCORE)
    if not keyed:
        return frozenset()
    top = keyed[0][0][:TIE]
    pkgs = {s.package for k, s in keyed if k[:TIE] == top}
    return frozenset(_site(s.package, s.module, s.where) for _, s in keyed if s.package in pkgs)


# The raise sites of the known threads' own signatures, kept in the cache folder (doctor/cachefiles.py ``SITES``):
# they are fixed texts of the shipped known-issues file, and looking them up cost a failed run's report ~77 M
# instructions in the trl gloo-timeout case (the buckets of their words decoded, their templates compiled, and the
# `regex` module imported for a signature that a template takes only as a cut paste). The file maps a signature's
# text to its sites as ``_sites_of`` gave them; its key (``_sites_key``) is made of what decides that answer: the
# interpreter, the `regex` module's file, the raise-site index and the modules that read it. Entries are added by the
# processes that looked a signature up, written at exit; an unreadable file costs the lookups, nothing else
_known: dict[str, tuple[Site, ...]] | None = None
_known_new: dict[str, tuple[Site, ...]] = {}
# the modules whose code may decide a text's sites: every module of the package that a process doing nothing but lookups
# holds (tests/test_known_mechanism.py checks it), each a path relative to the package
SITES_CODE = ("__init__.py", "cachefiles.py", "classplans.py", "classplans_replay.py", "fastclasses.py", "lazyre.py",
              "model.py", "signals.py", "values.py",
              "classify/__init__.py", "classify/message.py", "classify/raise_sites.py", "classify/raise_store.py",
              "classify/site_rank.py", "classify/slips.py", "known/__init__.py", "known/index.py", "known/mechanism.py",
              "known/normalise.py", "live/__init__.py", "live/atomic.py", "sources/__init__.py",
              "sources/ipython_tb.py", "sources/logtext.py", "sources/paste.py", "sources/prose_text.py",
              "sources/rich_box.py", "sources/traceback.py")


def _sites_key() -> str:
    import os
    import sys
    from importlib.machinery import PathFinder

    from .. import cachefiles
    from ..classify.raise_sites import DATA
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = PathFinder.find_spec("regex")
    parts = [sys.version, str(getattr(spec, "origin", None))]
    for path in (str(DATA), *(os.path.join(here, p) for p in SITES_CODE), getattr(spec, "origin", None) or ""):
        try:
            st = os.stat(path)
            parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}\0-")
    return cachefiles.key_of("\n".join(parts).encode("utf-8", "surrogatepass"))


def _known_table() -> dict[str, tuple[Site, ...]]:
    global _known
    if _known is None:
        from .. import cachefiles
        _known = cachefiles.read_table(cachefiles.SITES, _sites_key())
    return _known


def _save_known() -> None:
    """Add this process's lookups to the file (re-read first: another process may have added others)."""
    from .. import cachefiles
    cachefiles.merge_table(cachefiles.SITES, _sites_key(), _known_new)


def signature_sites(text: str) -> frozenset[Site]:
    """``sites_of`` a known thread's signature, from the cache file when a process of this very code and index looked
    it up before."""
    got = _known_table().get(text)
    if isinstance(got, tuple) and all(isinstance(s, tuple) and len(s) == 3 for s in got):
        return frozenset(got)
    try:
        sites = _sites_of(text)
    except (OSError, ValueError):  # a missing or damaged index costs the basis, never the report; nothing is kept
        return frozenset()
    if not _known_new:
        import atexit
        atexit.register(_save_known)
    _known_new[text] = _known_table()[text] = tuple(sorted(sites))
    return sites


def _sig_text(typ: str, message: str) -> str:
    return f"{typ}: {message}" if typ else message


def thread_sites(m: Match) -> frozenset[Site]:
    out: frozenset[Site] = frozenset()
    for typ, message in m.signatures:
        out |= signature_sites(_sig_text(typ, message))
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


# ------------------------------------------------------------------ lines that carry no cause of their own
# what a launcher, a supervisor or a wrapper prints about a child that failed: the same words for every cause
_LAUNCHER = lazyre.compile(
    r"(?i)\bfailed \(exitcode: ?-?\d+\)|\bRayTaskError\b|\bRayActorError\b|\bKilling subprocess\b|ChildFailedError"
    r"|\bSending process \d+ closing signal\b|\bClosing process \d+ via signal\b|\bReceived \d+ death signal\b"
    r"|\bProcess \d+ got signal\b|\bexits with return code\s*=|elastic[/.]multiprocessing[/.]api\b"
    r"|\bEngine core proc \S+ died unexpectedly|\bEngine core initialization failed\b"
    r"|\bengine core exited unexpectedly\b|\bWorker group in \w+ state\b")


def launcher_line(text: str) -> bool:
    """A line a launcher or wrapper prints about a failure below it (torchrun's ``failed (exitcode: N) local_rank``,
    its closing-signal lines, ``RayTaskError(...)`` headers, ``ChildFailedError``, ``Killing subprocess``, vLLM's
    engine-core monitor): never matched against threads, by raise site or by words."""
    return bool(_LAUNCHER.search(text or ""))


# messages that name an operation every component performs, not a component: torch's tensor-size and device checks
_GENERIC = lazyre.compile(
    r"(?i)^(?:the size of tensor a \(|the expanded size of the tensor \(|sizes of tensors must match"
    r"|mat1 and mat2 shapes cannot be multiplied|expected all tensors to be on the same device"
    r"|cuda error: device-side assert triggered)")


def generic(message: str) -> bool:
    """A message that does not tell its component: one of torch's generic checks (``The size of tensor a (N) must
    match the size of tensor b (M)``), or nothing but masked values once numbers, paths and quoted values are masked
    (``KeyError: '<a long key>'``)."""
    from .normalise import normalise
    msg = message.strip()
    if _GENERIC.search(msg):
        return True
    return not re.search(r"[a-z]{3,}", re.sub(r"<\w+>", " ", normalise(msg)))


# a signal or an exit status, as one name: exit code -8 = SIGFPE, 139 = 128 + 11 = SIGSEGV
_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL",
            11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}
_CODE = lazyre.compile(r"(?i)\b(?:exitcode|exit code|exit status|return code|returncode)\s*[:=]?\s*(-?\d+)"
                       r"|\b((?-i:SIG[A-Z]{2,6}))\b|\bsignal\s*:?\s*(\d+)\b")


def codes(text: str) -> frozenset[str]:
    """The signals and exit statuses a text names ('exitcode: -11' -> SIGSEGV; 'exit status 137' -> SIGKILL)."""
    out = set()
    for g in _CODE.finditer(text or ""):
        if g.group(2):
            out.add(g.group(2).upper())
        elif g.group(3):
            out.add(_SIGNALS.get(int(g.group(3)), f"signal {g.group(3)}"))
        else:
            n = int(g.group(1))
            name = _SIGNALS.get(-n) if n < 0 else _SIGNALS.get(n - 128) if n > 128 else None
            out.add(name or f"exit {n}")
    return frozenset(out)


_QUOTED_NAME = lazyre.compile(r"'([A-Za-z_][\w.]{1,60})'")


_NAMED = frozenset({"TypeError", "AttributeError", "NameError", "ImportError", "ModuleNotFoundError"})


_CALLABLE = lazyre.compile(r"\b([A-Za-z_]\w*(?:\.\w+)*\.\w+)\(\)")


def _names(messages: list[str]) -> set[str]:
    """The names quoted in the messages and the qualified callables they name (`PPOTrainer.__init__()`)."""
    return {q.lower() for msg in messages for q in (*_QUOTED_NAME.findall(msg), *_CALLABLE.findall(msg))}


def _common(a: set[str], b: set[str]) -> bool:
    """A name in common, a dotted name and its tail or its package alike ('embed_tokens.weight' and
    'model.embed_tokens.weight'; 'trl' and 'trl.trainer.utils')."""
    return any(x == y or x.endswith("." + y) or y.endswith("." + x) or x.startswith(y + ".") or y.startswith(x + ".")
               for x in a for y in b)


def cause_texts(f: Finding) -> list[str]:
    """The finding's quoted lines that may be looked up: its first evidence lines, less launcher and wrapper lines."""
    return [e.text for e in f.evidence[:MAX_EVIDENCE] if not launcher_line(e.text)]


def same_kind(m: Match, f: Finding) -> str:
    """'' when a thread found by its words is the same kind of error as the finding's, else why not: another exception
    type (both show one), another signal or exit code, no quoted name in
    common (``'reward_model'`` against ``'dtype'``), or a finding whose messages name no component (``generic``)."""
    from ..classify.message import parse
    texts = cause_texts(f)
    msgs = [parse(t) for t in texts]
    ftypes = {short_type(p.exc_type) for p in msgs if p.exc_type}
    ttypes = {short_type(t) for t, _ in m.signatures if t}
    if ftypes and ttypes and not ftypes & ttypes:
        return "another exception type"
    fcodes = frozenset().union(*(codes(t) for t in texts)) if texts else frozenset()
    tcodes = frozenset().union(*(codes(msg) for _, msg in m.signatures)) if m.signatures else frozenset()
    if fcodes and tcodes and not fcodes & tcodes:
        return "another signal or exit code"
    # the name quoted is what failed for these types (a missing argument, key, attribute or module), and the callable
    # named is where: a thread that shares neither is about another name
    named = [p.text for p in msgs if short_type(p.exc_type) in _NAMED]
    fnames, tnames = _names(named), _names([msg for t, msg in m.signatures if short_type(t) in _NAMED])
    if fnames and tnames and not _common(fnames, tnames):
        return "no quoted name in common"
    if msgs and all(generic(p.text) for p in msgs if p.text):
        return "the message names no component"
    return ""


def basis(m: Match, f: Finding) -> str:
    """How the thread is tied to the finding: RAISE_SITE, TYPE_COMPONENT_PHASE or SIMILARITY (module docstring)."""
    fs, ts = finding_sites(f), thread_sites(m)
    from ..classify.raise_sites import is_wrapper
    if any(is_wrapper(site[1], site[2]) for site in fs | ts):
        return SIMILARITY  # a wrapper's raise site is shared by every error it wraps
    ev = cause_texts(f)
    fcodes = frozenset().union(*(codes(t) for t in ev)) if ev else frozenset()
    tcodes = frozenset().union(*(codes(msg) for _, msg in m.signatures)) if m.signatures else frozenset()
    if fcodes and tcodes and not fcodes & tcodes:
        return SIMILARITY  # another signal or exit status: another failure, whatever prints it
    if fs & ts:
        return RAISE_SITE
    if fs and ts:
        return SIMILARITY  # both raise sites known, and they differ
    if not m.exact:
        return SIMILARITY  # no raise site to compare, and another wording: the component is not shown to be one
    if any(generic(msg) for _, msg in m.signatures):
        return SIMILARITY  # torch's shape check, a masked key: the same wording comes from every component
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
                   "primeintellect-ai/verifiers": "verifiers", "hiyouga/easyr1": "easyr1"}
SHARED = ("vllm", "vllm-ascend", "torch", "transformers", "deepspeed", "peft", "accelerate", "flash-attn",
          "flash_attn", "safetensors", "datasets")
SHARED_REPOS = {"vllm-project/vllm", "vllm-project/vllm-ascend", "pytorch/pytorch", "huggingface/transformers",
                "deepspeedai/deepspeed", "microsoft/deepspeed", "huggingface/peft", "huggingface/accelerate",
                "dao-ailab/flash-attention"}
# frameworks that run another's trainer: open-r1 runs trl's GRPOTrainer
_FAMILY = {"open-r1": "trl"}
# frameworks built on trl's trainers: a trl thread speaks of their runs too (not the other way round)
_BUILT_ON = {"unsloth": {"trl"}, "verifiers": {"trl"}, "axolotl": {"trl"}, "llamafactory": {"trl"},
             "easyr1": {"verl"}}   # EasyR1 forked verl's workers: a verl thread speaks of them


_TRAINER_WORD = lazyre.compile(r"(?i)(?<![\w-])(ms-swift|trl|open-r1|verl|easyr1|openrlhf|unsloth|llamafactory|llama-factory"
                               r"|verifiers)(?![\w])")


def thread_framework(m: Match) -> str | None:
    """The framework a thread is about: its repository's, else the first trainer its versions name ('trl-based GRPO',
    'OpenRLHF 0.6'); None for a library every framework shares or a project that names no trainer."""
    repo = m.thread.split("#", 1)[0].lower()
    if repo in SHARED_REPOS:
        return None
    if repo in FRAMEWORK_REPOS:
        return FRAMEWORK_REPOS[repo]
    word = _TRAINER_WORD.search(m.versions or "")
    if word is None:
        return None
    name = word.group(1).lower()
    return "llamafactory" if name == "llama-factory" else name


def _family(name: str) -> str:
    return _FAMILY.get(name, name)


# what a log, a command or a path shows of each trainer when the framework detector did not settle on one
_MARKERS = {"ms-swift": r"\bswift\b|ms[-_]swift", "trl": r"\btrl\b", "open-r1": r"open[-_]r1",
            "verl": r"\bverl\b", "easyr1": r"easy[-_]?r1", "openrlhf": r"openrlhf", "unsloth": r"unsloth",
            "llamafactory": r"llama[-_]?factory|llmtuner", "verifiers": r"\bverifiers\b"}


def _told_trainer(run: dict[str, Any] | None) -> str | None:
    """The run's trainer when the framework detector found one (not a runtime: torch, vLLM, DeepSpeed)."""
    if not isinstance(run, dict) or run.get("framework_source") in (None, "unknown", "runtime", "none"):
        return None
    have = run.get("framework")
    return have.lower() if isinstance(have, str) and have else None


def shows(theirs: str, f: Finding | None, run: dict[str, Any] | None) -> bool:
    """Whether anything of the run names the trainer ``theirs`` (its versions, the command, arguments, the finding's
    evidence and raise sites)."""
    rx = re.compile(_MARKERS.get(theirs, re.escape(theirs)), re.I)
    hay: list[str] = []
    if isinstance(run, dict):
        hay += [str(k) for k in (run.get("versions") or {})] + [str(k) for k in (run.get("inferred_versions") or {})]
        hay += [str(run.get("command") or ""), " ".join(map(str, run.get("args") or {}))]
    if f is not None:  # its evidence, its raise sites, and the paths its message quotes (the raising frame's)
        hay += [e.text for e in f.evidence] + [r.package for r in f.raised_by] + re.findall(r"\S*/\S*", f.message)
    return any(rx.search(h) for h in hay)


def other_trainer(m: Match, run: dict[str, Any] | None, f: Finding | None = None) -> bool:
    """A thread about another trainer than the run's: the run's trainer is known and is another one (a trainer built
    on the thread's, Unsloth on trl, is not another), or the run's trainer is not told (a runtime only, torch or vLLM,
    or nothing) and nothing of the run shows the thread's trainer; a thread's trainer is its repository's or the one
    its versions name. A library's own tracker (vLLM, torch, transformers) is no trainer's."""
    theirs = thread_framework(m)
    if theirs is None or not isinstance(run, dict):
        return False
    have = _told_trainer(run)
    if have is None:
        return not shows(theirs, f, run)
    have, theirs = _family(have), _family(theirs)
    return theirs != have and theirs not in _BUILT_ON.get(have, ())


def framework_clash(m: Match, f: Finding, run: dict[str, Any] | None, how: str) -> str:
    """'' when the thread's framework is the run's (or either is unknown), or the raise site is in a shared library;
    else why not."""
    have, theirs = _told_trainer(run), thread_framework(m)
    if not have or not theirs or _family(have) == _family(theirs):
        return ""  # a trainer not told: fit.unshown says the thread's trainer is not shown to be the run's
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
