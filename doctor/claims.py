"""Claims with their facts (issue 29 point 1): a sentence of a message or fix that states a fact of the run is
checked against what the run shows before it is printed, and goes (or is rewritten) when the run contradicts it.

One checker for every rule, applied where findings are finished (doctor/engine/session.py, after the fix re-check
of doctor/swift/fixcheck.py). A claim is recognised in the text itself (``KINDS``: a pattern over the sentence,
quoted log text and backticks left out), or declared by the rule that wrote it (``Finding.claims``, built with
``declare``) when its wording cannot be recognised. Each kind names the run fact it rests on and says when that
fact contradicts it:

- ``unset``: "X is not set", "X unset", "--x V: unset, ..." against the flag or variable that the command, the
  args or the environment hold;
- ``assumed``: "X V (assumed)" against a value of X the run does hold (the same value: the mark goes; another:
  the sentence goes);
- ``metric``: "grad_norm is 0", "loss and grad_norm are 0", "reward_std stays 0", "loss is NaN" against the
  logged series: a key logged at least once with no zero (no NaN) value among its rows;
- ``memory``: "runs out of memory", "not enough memory", "memory is full" against the CUDA OOM text of the run,
  which says how much was free: free memory far above the request is not a shortage (the sentence is rewritten
  to say so);
- ``world``: "world size 1", "runs on a single GPU" against the ranks the log shows (``[rank15]:`` means 16
  processes at least), the rank line and the launcher;
- ``model-size``: "7B" taken from the model's name, marked ``(from the model's name)`` unless the log printed a
  parameter count;
- ``version``: "pip install 'X>=V'", "upgrade X to V", "use X >= V", "downgrade X to V" against the installed
  version the log shows: advice that the installed release already satisfies, or that names the installed
  (failing) release, goes; a direction the other way round is rewritten;
- ``env``: "NCCL_IB_DISABLE=1 to test" against the run's environment: a setting it already has is no fix
  (doctor/claim_env.py).

Requests are checked too: a finding that asks for the launch command, in a run whose command was read (a command
file, a launch line), loses that request (``without_given_requests``).

A sentence is judged as a whole: when any claim in it is contradicted it is dropped, or replaced by the kind's
rewrite when one is obvious. A message that loses every sentence says that its explanation was contradicted.

Pure: facts in (``RunFacts``, built by the session from its RunState), a Finding out.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from . import claim_env, claim_trainer, lazyre
from .claim_facts import Claim, Kind, MetricFacts, Oom, RunFacts, Verdict, conditional, mask, read_oom
from .model import Finding
from .textcache import for_short_texts

_mask, _conditional = mask, conditional


def declare(text: str, kind: str, subject: str, value: str = "") -> tuple[str, str, str, str]:
    """A claim a rule attaches to its finding (``Finding.claims``) when the wording cannot be recognised: the
    sentence holding ``text`` states the fact (kind, subject, value) and is checked like a recognised claim."""
    if kind not in KINDS:
        raise ValueError(f"unknown claim kind {kind!r}: one of {sorted(KINDS)}")
    return (text, kind, subject, value)


_NAME = r"(--[a-z][a-z0-9_]*|[A-Z][A-Z0-9_]{2,}|[a-z][a-z0-9]*_[a-z0-9_]+)"

# -- unset -----------------------------------------------------------------------------------------------------
_UNSET = [
    lazyre.compile(_NAME + r"`? (?:is |was |are )?(?:still )?(?:not set|unset)(?= *[,;.:()]|$| in | by | on )"),
    lazyre.compile(_NAME + r" [^\s:,;()]{1,40}: unset\b"),       # --vllm_max_model_len 4096: unset, vLLM sizes ...
    lazyre.compile(_NAME + r" (?:is |was )?left (?:unset|at (?:its|the) default)\b"),
]
_NOT_SEEN = lazyre.compile(r"^\s*(--[a-z][a-z0-9_]*)\b[^()]*(\(not set in the configuration seen\))")


def _find_unset(sentence: str, masked: str) -> Iterator[Claim]:
    for pat in _UNSET:
        for m in pat.finditer(masked):
            if not _conditional(masked, m.start()):
                yield Claim("unset", m.group(1), "", m.start(), m.end())
    seen = _NOT_SEEN.search(masked)
    if seen:
        yield Claim("unset", seen.group(1), "", seen.start(2), seen.end(2))


_UNSET_WORDS = lazyre.compile(r"(?:is |was |are )?(?:still )?(?:not set|unset)|(?:is |was )?left (?:unset|at (?:its|the) default)")


def _judge_unset(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    v = facts.value(c.subject)
    if v is None and not facts.config_read:  # nothing of the configuration was read: "unset" is not known
        span = sentence[c.start:c.end]
        said = _UNSET_WORDS.sub("not read from the inputs", span, count=1)
        if said == span or "(not set in the configuration seen)" in span:
            said = span.replace("(not set in the configuration seen)", "(not read from the inputs)")
        return Verdict("no command, argument dump or args.json was read", sentence[:c.start] + said + sentence[c.end:])
    if v is None:
        return None
    name = c.subject.lstrip("-")
    why = f"the run sets {name} ({v})"
    if sentence[c.start:c.end] == "(not set in the configuration seen)":
        return Verdict(why, sentence[:c.start] + f"(now {v})" + sentence[c.end:])
    m = re.match(re.escape(c.subject) + r" not set: ([^\s()]+) \(assumed\)(?:, the default)?", sentence[c.start:])
    if m:
        from .swift.fixcheck import same
        if same(v, m.group(1)):  # the value the rule took is the run's: only the "not set ... assumed" is false
            return Verdict(why, sentence[:c.start] + f"{c.subject} {v}" + sentence[c.start + m.end():])
    return Verdict(why)


# -- assumed ---------------------------------------------------------------------------------------------------
_ASSUMED = lazyre.compile(r"(?<![\w-])" + _NAME + r"(?: is| was| =|=)? ([0-9][0-9.e+-]*|true|false|[a-z][a-z0-9_]*) \(assumed\)")


def _find_assumed(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _ASSUMED.finditer(masked):
        if m.group(1) in ("size",):
            continue
        yield Claim("assumed", m.group(1), m.group(2), m.start(), m.end())


def _judge_assumed(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    v = facts.value(c.subject)
    if v is None:
        return None
    from .swift.fixcheck import same
    name = c.subject.lstrip("-")
    if same(v, c.value):
        return Verdict(f"the run sets {name} {v}: read, not assumed",
                       sentence[:c.start] + sentence[c.start:c.end].replace(" (assumed)", "") + sentence[c.end:])
    return Verdict(f"the run sets {name} {v}, not {c.value}")


# -- metric ----------------------------------------------------------------------------------------------------
_MKEY = r"(grad_norm|reward_std|loss|reward)"
_METRIC = lazyre.compile(r"(?<![\w/])" + _MKEY + r"(?: and " + _MKEY + r")? (?:is|are|was|were|stays?|stayed|remains?|"
                     r"remained|sits?|sat)(?: at)? (?:exactly |always |still |all |constant(?:ly)? )?(0|zero|NaN|nan|inf)"
                     r"(?!\w|\.\d)")


def _find_metric(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _METRIC.finditer(masked):
        if _conditional(masked, m.start()):
            continue
        value = "nan" if m.group(3).lower() in ("nan", "inf") else "0"
        for key in (m.group(1), m.group(2)):
            if key:
                yield Claim("metric", key, value, m.start(), m.end())


def _judge_metric(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    mf = facts.metrics.get(c.subject)
    if mf is None or mf.logged == 0:
        return None
    if c.value == "nan":
        if mf.nonfinite == 0:
            return Verdict(f"{c.subject} is finite in all {mf.logged} logged rows")
        return None
    if mf.zero == 0 and mf.logged > mf.nonfinite:
        shown = f" (e.g. {mf.example:.4g})" if mf.example is not None else ""
        return Verdict(f"{c.subject} is non-zero in all {mf.logged} logged rows{shown}")
    return None


# -- memory ----------------------------------------------------------------------------------------------------
_SHORTAGE = lazyre.compile(r"\b(?:^Out of (?:GPU|CUDA|device) memory|(?:runs?|ran|running|run) out of (?:GPU |CUDA |device )?memory|not enough (?:free )?"
                       r"(?:GPU |CUDA |device )?memory|(?:GPU |CUDA |device )?memory (?:is|was) (?:full|exhausted)|"
                       r"no (?:GPU |CUDA )?memory (?:is )?left|shortage of (?:GPU |CUDA )?memory)\b", re.I)


def _find_memory(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _SHORTAGE.finditer(masked):
        if not _conditional(masked, m.start()) and not re.search(r"\b(?:not|no)(?: a)?(?: plain)? $", masked[:m.start()]):
            yield Claim("memory", "gpu", "", m.start(), m.end())


def _judge_memory(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    if not facts.ooms or not all(o.ample for o in facts.ooms):
        return None
    o = max(facts.ooms, key=lambda o: o.free)
    of = f" of {o.total:.2f} GiB" if o.total else ""
    why = f"the OOM message itself reports {o.free:.2f} GiB free{of} against {o.requested:.2f} GiB requested"
    said = (f"The error itself reports {o.free:.2f} GiB free{of} on that GPU against {o.requested:.2f} GiB requested: "
            "not a plain shortage of memory, but fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), a "
            "per-process memory limit, or another process taking the memory at that moment.")
    if o.allowed is not None:   # torch printed the cap: it is the limit, no guess among the three
        said = (f"The error itself reports {o.free:.2f} GiB free{of} on that GPU against {o.requested:.2f} GiB "
                f"requested, and a per-process cap of {o.allowed:.2f} GiB: the process reached its cap, not the card.")
    if sentence.startswith("Out of"):  # the lead of an OOM finding: where it failed stays, the shortage goes
        return Verdict(why, "A CUDA allocation failed" + sentence[c.end:] + " " + said)
    return Verdict(why, said)


# -- world size ------------------------------------------------------------------------------------------------
_WORLD = lazyre.compile(r"\bworld[ _]size(?: of)?[ =:]+1\b(?![.\d])|\b(?:runs?|running|trains?|training|launched|this run "
                    r"is) on (?:a single|one|1) GPU\b|\bsingle-GPU run\b|\(1 process\)", re.I)


def _find_world(sentence: str, masked: str) -> Iterator[Claim]:
    for m in _WORLD.finditer(masked):
        if not _conditional(masked, m.start()):
            yield Claim("world", "world_size", "1", m.start(), m.end())


def _judge_world(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    n = facts.world_at_least
    if n is None or n < 2:
        return None
    if facts.world and facts.world >= 2:
        return Verdict(f"the run has world size {facts.world}")
    return Verdict(f"the log shows rank {facts.max_rank}: world size {n} at least")


# -- model size from the name ----------------------------------------------------------------------------------
_SIZE = lazyre.compile(r"(?<![\w./\-])(\d+(?:\.\d+)?)B(?![\w\-])")
FROM_NAME = "(from the model's name)"


def _find_size(sentence: str, masked: str) -> Iterator[Claim]:
    if re.search(r"from (?:the|its) (?:model's )?name", sentence):  # the rule marked it already
        return
    for m in _SIZE.finditer(masked):
        yield Claim("model-size", m.group(1), m.group(1), m.start(), m.end())


def _judge_size(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    if facts.params_read or not facts.model:
        return None
    from .checks.memory._facts import params_b
    b = params_b(facts.model)
    try:
        if b is None or abs(float(c.value) - b) > 1e-9:
            return None
    except ValueError:
        return None
    return Verdict(f"{c.value}B is read from the model's name {facts.model}, not from a parameter count",
                   sentence[:c.end] + " " + FROM_NAME + sentence[c.end:])


# -- version advice --------------------------------------------------------------------------------------------
_PKG = r"(vllm|vLLM|trl|transformers|ms-swift|deepspeed|DeepSpeed|torch|peft|accelerate)"
_V = r"v?(\d+(?:\.\d+){1,2})"
_SPEC = r"((?:(?:==|>=|<=|~=|!=|>|<) ?\d+(?:\.\d+){0,2}(?:\.\*)?,?)+)"
_ADVICE = [
    ("spec", lazyre.compile(r"\bpip install (?:-U |--upgrade )?['\"]?" + _PKG + r"(?:\[\w+\])? ?" + _SPEC)),
    ("spec", lazyre.compile(r"\b(?:[Uu]se|[Ii]nstall|[Pp]in|[Rr]equire) " + _PKG + r" ?" + _SPEC)),
    ("up", lazyre.compile(r"\b(?:[Uu]pgrade|[Uu]pdate) " + _PKG + r" to (?:version |release |at least )?" + _V)),
    ("down", lazyre.compile(r"\b[Dd]owngrade " + _PKG + r" to (?:version |release )?" + _V)),
]


_REINSTALL = lazyre.compile(r"(?i)\breinstall|\b(?:clean|fresh|new) (?:virtual )?environment\b")


def _find_version(sentence: str, masked: str) -> Iterator[Claim]:
    for how, pat in _ADVICE:
        # a pip command in backticks is advice too: the unmasked sentence for "pip install", the masked for words
        text = sentence if how == "spec" and "pip install" in pat.pattern else masked
        for m in pat.finditer(text):
            if _conditional(masked, m.start()):
                continue
            value = m.group(2).rstrip(",") if how == "spec" else ("<=" if how == "down" else ">=") + m.group(2)
            yield Claim("version", _pkg(m.group(1)), f"{how}:{value}", m.start(), m.end())


def _pkg(name: str) -> str:
    low = name.lower()
    return "ms-swift" if low in ("swift", "ms-swift") else low


def _vtuple(text: str) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def satisfies(version: str, spec: str) -> bool | None:
    """Does ``version`` satisfy a pip specifier (``>=0.26,<1.0``)? None when either cannot be read."""
    have = _vtuple(version)
    if have is None:
        return None
    ok = True
    for part in filter(None, (p.strip() for p in spec.split(","))):
        m = re.match(r"(==|>=|<=|~=|!=|>|<) ?(\d+(?:\.\d+)*)(\.\*)?$", part)
        if m is None:
            return None
        want = _vtuple(m.group(2))
        assert want is not None
        op, c = m.group(1), _cmp(have, want)
        if m.group(3) or op == "~=":  # a prefix: the same release series
            c = _cmp(have[:len(want)], want)
            ok = ok and (c == 0 if op in ("==", "~=") else c != 0)
            continue
        ok = ok and {"==": c == 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0, "!=": c != 0}[op]
    return ok


def _judge_version(c: Claim, sentence: str, facts: RunFacts) -> Verdict | None:
    have = facts.versions.get(c.subject)
    if not have:
        return None
    how, spec = c.value.split(":", 1)
    if how == "spec":
        if spec.startswith("==") and _REINSTALL.search(sentence):
            return None   # the installed release again, into a clean environment: its own pins, not a change of release
        if satisfies(have, spec):
            return Verdict(f"{c.subject} {have} is installed: it already satisfies {spec}")
        return None
    want = spec[2:]
    vh, vw = _vtuple(have), _vtuple(want)
    if vh is None or vw is None:
        return None
    c_ = _cmp(vh, vw)
    if c_ == 0:
        return Verdict(f"{c.subject} {have} is the installed release, the one that failed")
    if how == "up" and c_ > 0:
        word = re.match(r"[Uu]pgrade|[Uu]pdate", sentence[c.start:])
        if word:
            new = ("D" if word.group(0)[0].isupper() else "d") + "owngrade"
            return Verdict(f"{c.subject} {have} is newer than {want}: going to {want} is a downgrade",
                           sentence[:c.start] + new + sentence[c.start + word.end():])
    if how == "down" and c_ < 0:
        new = "U" if sentence[c.start] == "D" else "u"
        return Verdict(f"{c.subject} {have} is older than {want}: going to {want} is an upgrade",
                       sentence[:c.start] + new + "pgrade" + sentence[c.start + len("downgrade"):])
    return None


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("unset", "the flag or environment variable in the command, args or environment", _find_unset, _judge_unset),
    Kind("assumed", "the flag's value in the command or args", _find_assumed, _judge_assumed),
    Kind("metric", "the logged metric series (loss, grad_norm, reward, reward_std)", _find_metric, _judge_metric),
    Kind("memory", "the CUDA OOM message's free memory and request", _find_memory, _judge_memory),
    Kind("world", "the world size: rank line, launcher, [rankN]: prefixes", _find_world, _judge_world),
    Kind("model-size", "a parameter count printed by the log vs the model's name", _find_size, _judge_size),
    Kind("version", "the installed versions the log shows", _find_version, _judge_version),
    Kind("trainer", "the trainer the run shows (GRPO or another)", claim_trainer.find, claim_trainer.judge),
    Kind("env", "the environment variables the run's launch and exports set", claim_env.find, claim_env.judge),
)}


# --------------------------------------------------------------------------------------------------- the checker

_ABBREV = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "cf.", "no.")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences: after . ! ? and a space before a capital, a backtick, a quote or a bracket,
    never inside backticks or brackets nor after an abbreviation (e.g.)."""
    return list(_sentences(text))


@for_short_texts
def _sentences(text: str) -> tuple[str, ...]:
    """``sentences``, cached for short texts: watch checks the same findings' messages and fixes at every live
    evaluation."""
    out, start, depth, tick = [], 0, 0, False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            tick = not tick
        elif not tick and ch in "([":
            depth += 1
        elif not tick and ch in ")]":
            depth = max(0, depth - 1)
        elif (not tick and depth == 0 and ch in ".!?" and i + 2 < len(text) and text[i + 1] == " "
              and re.match(r"[A-Z`'\"(\[]", text[i + 2])
              and not text[start:i + 1].lower().endswith(_ABBREV)):
            out.append(text[start:i + 1])
            start = i + 2
            i += 1
        i += 1
    if start < len(text):
        out.append(text[start:])
    return tuple(s for s in (s.strip() for s in out) if s)



# sentence -> its claims: recognising them is a function of the text alone (claims are frozen), and watch checks the
# same findings' sentences at every live evaluation of a run (~15% of watch's CPU over a 4-step run with a finding)
_FOUND: dict[str, tuple[Claim, ...]] = {}
_FOUND_MAX = 4096


def claims_in(sentence: str) -> list[Claim]:
    """The claims recognised in one sentence (every kind)."""
    got = _FOUND.get(sentence)
    if got is None:
        masked = _mask(sentence)
        got = tuple(c for kind in KINDS.values() for c in kind.find(sentence, masked))
        if len(_FOUND) >= _FOUND_MAX:
            _FOUND.clear()
        _FOUND[sentence] = got
    return list(got)


def check_sentence(sentence: str, facts: RunFacts, declared: Iterable[Claim] = ()
                   ) -> tuple[str | None, list[tuple[str, str]]]:
    """The sentence as it may be printed (None: dropped) and the (kind, why) of each contradicted claim. A rewrite
    is judged again (a sentence with two contradicted claims takes both rewrites, or goes)."""
    reasons: list[tuple[str, str]] = []
    current = sentence
    extra = list(declared)
    for _ in range(4):  # each pass settles one claim
        found = claims_in(current) + extra
        verdict = next(((c, v) for c in found if (v := KINDS[c.kind].judge(c, current, facts)) is not None), None)
        if verdict is None:
            return current, reasons
        claim, v = verdict
        reasons.append((claim.kind, v.why))
        if v.rewrite is None or claim.start < 0:
            return None, reasons
        current = v.rewrite
    return None, reasons


Declared = tuple[str, str, str, str]   # (text locating the sentence, kind, subject, value): ``declare``


def check_text(text: str, facts: RunFacts, declared: Iterable[Declared] = ()
               ) -> tuple[str, list[tuple[str, str, str]]]:
    """A message or fix item with its contradicted sentences dropped or rewritten, and (sentence, kind, why) of
    each change. ``declared``: the claims a rule attached, each judged in the sentence that holds its text."""
    changes: list[tuple[str, str, str]] = []
    kept = []
    decl = list(declared)
    any_change = False
    for s in sentences(text):
        mine = [Claim(kind, subject, value) for where, kind, subject, value in decl if where and where in s]
        new, reasons = check_sentence(s, facts, mine)
        changes.extend((s, kind, why) for kind, why in reasons)
        any_change = any_change or new != s
        if new is not None and new not in kept:  # one rewrite said once (two shortage sentences, one correction)
            kept.append(new)
    if not any_change:
        return text, []
    return " ".join(kept), changes


# a request for the launch command in a sentence that asks for more input ("Share the lines ... and the launch
# command.", "Paste next: the traceback ..., and the launch command.", "...; share them with the launch command.")
_ASK_COMMAND = lazyre.compile(r"(?:,? and|,? with|; share them with) the launch command(?=[.;)]|$)")


def without_given_requests(text: str, facts: RunFacts) -> str:
    """``text`` without its request for the launch command when the run's command was read: asking for what the
    input holds is a sentence the run contradicts."""
    if not facts.command_given or "launch command" not in text:
        return text
    return _ASK_COMMAND.sub("", text)


def check_finding(f: Finding, facts: RunFacts) -> tuple[Finding, list[tuple[str, str, str]]]:
    """The finding with its message, fix and verify line checked against ``facts``, and every change (sentence, kind,
    why)."""
    changes: list[tuple[str, str, str]] = []

    def check(text: str) -> str:
        new, ch = check_text(without_given_requests(text, facts), facts, f.claims)
        changes.extend(ch)
        return new

    message = check(f.message)
    if not message.strip() and f.message.strip():
        why = "; ".join(dict.fromkeys(why for _, _, why in changes))
        message = f"{f.title}. (The usual explanation of this does not fit this run: {why}.)"
        # what the finding rests on is contradicted by the run: it stands on its pattern alone, no surer than that
        f = replace(f, confidence="possible")
    fix = tuple(x for x in (check(s) for s in f.fix) if x.strip())
    verify = check(f.verify) if f.verify else f.verify
    if message == f.message and fix == f.fix and verify == f.verify:
        return f, changes
    return replace(f, message=message, fix=fix, verify=verify), changes


def in_trainer_terms(findings: list[Finding], facts: RunFacts) -> list[Finding]:
    """The ``trainer`` claims checked again once the fixes are said in the framework's terms (doctor/swift/terms.py
    writes trl's GRPOConfig fields after the session's check): a DPO run reads DPOConfig, or no GRPO-only field."""
    if facts.trainer is None:
        return findings
    return [check_finding(f, facts)[0] for f in findings]


__all__ = ["FROM_NAME", "KINDS", "Claim", "Declared", "Kind", "MetricFacts", "Oom", "RunFacts", "Verdict", "check_finding",
           "check_sentence", "check_text", "claims_in", "declare", "in_trainer_terms", "read_oom", "satisfies", "sentences"]
