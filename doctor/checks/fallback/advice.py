"""The concrete part of a structural finding (GD990-GD997): what the evidence says about the cause and the fix,
in the terms of the framework that ran. doctor/classify/hints.py reads the message, doctor/classify/parts.py the
part of a component that failed; this module puts them together for one verdict. Pure."""
from __future__ import annotations

from typing import NamedTuple

from ... import lazyre
from ...classify.boundary import boundary
from ...classify.boundary import explain as boundary_explain
from ...classify.boundary import fix as boundary_fix
from ...classify.component import possessive, stack_packages
from ...classify.groups import account
from ...classify.hints import (
    NOT_GIVEN,
    attribute_owner,
    entry_point,
    flag_fix,
    flag_from_code,
    flags_named,
    given_in,
    layout_divides,
    message_hints,
    negative_budget,
    owner_text,
    sample_shape,
    vllm_memory_note,
)
from ...classify.mm_budget import account as mm_account
from ...classify.parts import feature_of, part_fix, part_of
from ...classify.structure import Verdict
from ...classify.version_range import pip_name, required_range
from ...classify.weight_names import reading as weight_name_reading
from ...engine.state import RunState
from ...signals import ExceptionInfo
from .wrapped_model import wrapped_attribute

FRAMEWORK_NAMES = {"ms-swift": "ms-swift", "trl": "trl", "unsloth": "unsloth", "verifiers": "verifiers",
                   "verl": "verl", "easyr1": "EasyR1", "openrlhf": "OpenRLHF"}


def framework_of(ctx: RunState) -> str | None:
    """The framework that ran, or None when nothing in the inputs points at one (the default is only assumed)."""
    fw, _ver, _recipe, source = ctx.framework()
    return None if source == "assumed" else fw


def context_before(ctx: RunState, path: str, seq: int, n: int = 40) -> str:
    """The text of the lines just before ``seq`` in one input (the notice and the last server requests)."""
    tail = ctx.tails.get(path) or ()
    return "\n".join(l.text for l in [l for l in tail if l.seq <= seq][-n:])


def meta_fix(meta, framework: str | None) -> list[str]:
    """The rule's fix lines, in the framework's terms when the rule has them (``[options] fix_<framework>``)."""
    alt = meta.options.get(f"fix_{framework}") if framework else None
    return list(alt) if alt else list(meta.fix)


_NOTEBOOK = ("ipython-input", "Cell In[", ".py](", "<ipython-")
BOUNDARY_ENTRIES = ("import-time", "signature-drift", "stdlib-module-missing")  # doctor/data/structure.toml entries a boundary explains


def versions_of(ctx: RunState) -> dict[str, str]:
    """The versions the log printed, with the framework's own (unsloth's banner) when it was read."""
    out = dict(ctx.run.versions)
    fw, ver, _recipe, source = ctx.framework()
    if fw and ver and source != "assumed":
        out.setdefault(fw, ver)
    return out


def boundary_advice(v: Verdict, ctx: RunState, exc: ExceptionInfo | None, context: str) -> tuple[str, str]:
    """(explanation, fix) naming the two packages of an import or signature clash (doctor/classify/boundary.py), or
    ('', '') when the structure does not show them."""
    if exc is None or v.entry.id not in BOUNDARY_ENTRIES:
        return "", ""
    b = boundary(exc, v.frames)
    if b is None:
        return "", ""
    versions = versions_of(ctx)
    header = "Traceback (most recent call last)" in exc.raw and not exc.raw.lstrip().startswith("Traceback")
    notebook = header or any(n in context for n in _NOTEBOOK)  # IPython's header names the type before the stack
    return boundary_explain(b, versions), boundary_fix(b, versions, notebook)


class Advice(NamedTuple):
    why: str                 # sentences to add to the message
    first: list[str]         # fix lines to put first
    drop: tuple[str, ...]    # substrings of the rule's fix lines the evidence makes moot
    own_reading: bool        # the evidence names the cause: the entry's list of usual causes is not printed


def advise(v: Verdict, ctx: RunState, exc: ExceptionInfo | None, context: str) -> Advice:
    fw = framework_of(ctx)
    why: list[str] = []
    first: list[str] = []
    drop: tuple[str, ...] = ()
    named = weight_name_reading(exc.message) if exc is not None and exc.short_type == "KeyError" else None
    own_reading = named is not None and v.entry.category == "vllm-engine-error"
    b_why, b_fix = boundary_advice(v, ctx, exc, context)
    if b_why:
        why.append(b_why)
    if b_fix:
        first.append(b_fix)
        drop += ("named in the stack",)  # the boundary's line names them
    elif exc is not None and not exc.frames and v.entry.category == "import-or-dependency-error" and not v.entry.fix:
        # no stack was read: the packages are not "named in the stack"; say where they are named
        first.append("Find the two packages the failing call went between (the full traceback names them: paste it "
                     "if this was an excerpt) and upgrade or pin them together: the caller was written for another "
                     "version of the callee.")
        drop += ("named in the stack",)
    elif len(stack_packages(v.frames)) < 2:
        drop += ("named in the stack",)  # every library frame is one package's: no caller/callee pair to pin
    wanted = required_range(exc.message) if exc is not None and v.entry.category == "import-or-dependency-error" \
        else None
    if wanted is not None:  # the message states the range and the version found: the fix is computed from them
        pkg, spec, got = wanted
        who = possessive(v.component) if v.frames and v.component not in ("unknown", "the script's code") else "the"
        first.append(f"Install {pkg} within {spec} (the installed one is {got}): `pip install '{pip_name(pkg)}{spec}'`; "
                     f"or install a release of the package that checks it ({who} requirement) that accepts {got}.")
        drop += ("named in the stack",)
    if exc is not None and v.entry.category == "batch-divisibility":
        run = ctx.run
        acc = account(exc.message, context, run.int_arg("per_device_train_batch_size"), run.int_arg("num_generations"),
                      run.world_size(), fw)
        why.extend(acc.why)
        first.extend(acc.fix)
        drop += acc.drop
    if exc is not None and v.entry.category == "multimodal-image-error":
        texts = list(ctx.run.command_texts) + context.splitlines()
        mm = mm_account(exc.message, texts, fw, str(ctx.run.get("model") or ""))
        why[:0] = mm.why
        first[:0] = mm.fix
        drop += mm.drop
    # the lines right after the exception too: a loader's bar ("Loading safetensors checkpoint shards: 0%") printed by
    # another process of the launch shows which load it was
    after = "\n".join(ln.text for ln in ctx.lines_after(exc.where.path, exc.seq, 8)) if exc is not None else ""
    part = part_of(v.frames, context + "\n" + after)
    if part is not None:
        if part.what:
            why.append(part.what if named is not None or not part.cases else f"{part.what} {part.cases}")
        if part.id in ("vllm-weight-load", "vllm-lora", "vllm-checkpoint-load", "vllm-weight-names"):
            drop += ("Retry with the smallest change to the vLLM side",)  # eager mode or one GPU cannot fix these
        first.extend(part_fix(part, fw) if fw else part_fix(part, "ms-swift")[:1] + part_fix(part, None))
    feature = feature_of(v.frames, exc.message if exc is not None else "", context) \
        if part is None and v.entry.category == "vllm-engine-error" else None
    if feature is not None:
        why.append(feature[0])
        first.insert(0, feature[1])
        drop += ("Retry with the smallest change to the vLLM side",)  # eager mode or one GPU leave the feature on
    if own_reading:
        why.insert(0, named.why)
        first.insert(0, named.fix)
        # the entry's fix lists every usual cause; the name says which one
        drop += ("Compare the checkpoint's tensor names", "Compare the name with what this vLLM model class loads")
    mem = vllm_memory_note(context) if v.entry.category == "cuda-oom" else None
    if mem is not None:
        why.append(mem[0])
        first.append(mem[1])
    limit = model_code_limit(v.frames, exc)
    if limit is not None:
        why.append(limit[0])
        first.insert(0, limit[1])
        drop += ("Retry with the smallest change to the vLLM side", "Look above this traceback")
    if exc is not None and exc.message:
        for h in message_hints(exc.message, exc_type=exc.type):
            first.append(f"The message itself says how: \"{h}\"")
        shape = sample_shape(exc.message)
        if shape:
            why.append(shape)
            first.append("Make the dataset's prompt format match what this trainer version expects (a list of "
                         "messages whose content is a string, or typed parts for multimodal), or install the "
                         "transformers/trl versions the project pins.")
        neg = negative_budget(exc.message)
        if neg:
            why.append(neg.strip())
            first.append(_budget_fix(fw))
        owner = attribute_owner(exc.message) if exc.short_type == "AttributeError" else None
        wrapped = wrapped_attribute(exc.message) if exc.short_type == "AttributeError" else None
        if wrapped is not None:
            why.append(wrapped[0])
            first.insert(0, wrapped[1])
        if owner is not None:
            w, f = owner_text(owner, fw)
            why.append(w.strip())
            first.append(f)
        keyed = flag_from_code(v.frames) if exc.short_type == "KeyError" else None
        if keyed is not None:
            flag, code = keyed
            why.append(f"The key {exc.message} comes from --{flag} (`{code[:100]}`): that value is not registered in "
                       f"the code path that ran.")
            first.append(f"Give --{flag} a value this entry point accepts (the choices in the documentation of the "
                         f"installed version), or the registration (plugin) that adds {exc.message}.")
            cmd = entry_point(v.frames)
            if cmd in ("sft", "pt", "infer") and "grpo" in (exc.message.lower() + " " + str(ctx.run.cli).lower()):
                why.append(f"The stack starts in `swift {cmd}`: GRPO is an RLHF type, trained by `swift rlhf "
                           f"--rlhf_type grpo`, and `swift {cmd}` has no GRPO loss.")
                first.insert(0, f"Launch GRPO as `swift rlhf --rlhf_type grpo ...` (not `swift {cmd}` with a grpo "
                                f"loss type; in the web UI, pick the RLHF/GRPO tab).")
        # only a flag the user passed or one the message says was given: an attribute the code read or a parameter
        # a caller left out is no flag of the command
        given = set(ctx.run.cli or ()) | set(ctx.run.args or ())
        flags = [] if NOT_GIVEN.search(exc.message) else [
            f for f in flags_named(exc.message, ctx.run.cli) if given_in(f, exc.message, given)]
        if flags and owner is None and not neg:
            first.append(flag_fix(flags, fw, ctx.trainer_kind().config_class))
        fits = layout_divides(exc.message)
        if fits:  # the sizes divide: the lines that tell to make them divide cannot help
            why.append(fits)
            first = [x for x in first if "divide" not in x and "a multiple of" not in x]
    return Advice(" ".join(why), first, drop, own_reading)


# vLLM's model implementations refuse what their code does not cover: a model version or variant, a feature for that
# architecture (the raise-site index holds 323 such sites in vllm/model_executor/models/, e.g. minicpmv.py
# "Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got version: ...", "... does not support prefix
# caching", "Pipeline Parallel not supported")
_LIMIT = lazyre.compile(r"\b(?:only supports?|does not support|do not support|not supported|[Uu]nsupported|not yet supported)\b")


def model_code_limit(frames, exc: ExceptionInfo | None) -> tuple[str, str] | None:
    """(why, fix) when vLLM's implementation of the model refused the checkpoint or a feature, else None."""
    if exc is None or not _LIMIT.search(exc.message) or not frames:
        return None
    inner = frames[-1].path.replace("\\", "/")
    if "vllm/model_executor/models/" not in inner:
        return None
    name = inner.rsplit("/", 1)[-1]
    return (f"vLLM's own implementation of this architecture (vllm/model_executor/models/{name}) refused it: the "
            f"installed vLLM's code for the model does not cover what the checkpoint or the run asks for (a newer "
            f"variant or version of the model, or a feature such as prefix caching or pipeline parallelism for "
            f"this model).",
            f"Compare what the message says is supported with the checkpoint (its config.json) and the engine "
            f"options: a newer model variant needs a vLLM release whose models/{name} supports it (upgrade vLLM "
            f"within the range the trainer supports); a feature the model code refuses is turned off in the engine "
            f"options.")


def _budget_fix(fw: str | None) -> str:
    if fw in ("trl", "unsloth"):
        return ("Make every prompt fit: GRPOConfig max_prompt_length (prompts are cut to it) plus max_completion_length "
                "at most the engine's context (vllm_max_model_length / max_seq_length), and fewer image tokens.")
    return ("Make every prompt fit the context: raise --vllm_max_model_len (at least the longest prompt plus "
            "--max_completion_length), or cap prompts with --max_length and --truncation_strategy delete (drops "
            "over-long samples) and image tokens with MAX_PIXELS.")


def cut_message(frames) -> tuple[str, list[str]]:
    """For a traceback cut inside a raise statement: the message that statement raises (raise-site index), and the
    fix its own words give. ('', []) when the last frame's line is no raise of an indexed message."""
    if not frames:
        return "", []
    last = frames[-1]
    try:
        from ...classify.raise_sites import complete_cut
        site = complete_cut(last.path, last.func, last.code)
    except (OSError, ValueError):
        return "", []
    if site is None:
        return "", []
    why = (f"The traceback stops in the raise statement `{last.code.strip()[:80]}`; in {site.package} {site.versions} "
           f"({site.where}) that statement raises `{site.kind}: {site.template}`.")
    return why, [f"The message itself says how: \"{h}\"" for h in message_hints(site.template)]
