"""GD401: ms-swift (or an HfArgumentParser script) hands back the flags no argument class accepted and stops; a carriage
return among them (a launch script with Windows line endings) is said as such, and every other one is
explained with the flag history of the version the log shows (renamed, removed, added later, misspelt)."""
from __future__ import annotations

import ast
import difflib
import re

from ...engine.state import RunState
from ...rules import Diagnosis, Hit
from ...sources.argv import group_flags
from ...sources.swiftconfig import RunConfig
from ...swift.flags import ADDED, REMOVED, RENAMED
from ...swift.run import at_least, version_label
from . import _llamafactory as lf
from ._layout import nproc_per_node
from ._swift_fields import RLHF_FIELDS_4_6


def split_argv(text: str) -> list[str]:
    try:
        v = ast.literal_eval("[" + text + "]")
        if isinstance(v, list):
            return [str(x) for x in v]
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    return [a or b for a, b in re.findall(r"'([^']*)'|\"([^\"]*)\"", text)]


def _shown(name: str, vals: list[str]) -> str:
    flag = name if name.startswith("-") else f"--{name}"
    return " ".join([flag] + [v if v and " " not in v else repr(v) for v in vals])


def flag_advice(name: str, vals: list[str], run: RunConfig) -> str:
    key = name.lstrip("-").replace("-", "_")
    shown = _shown(name, vals)
    val = " ".join(vals)
    ver = version_label(run)
    if key == "config":
        return (f"Drop `{shown}`: ms-swift has no --config flag; it reads a YAML/JSON config given as the first "
                f"argument: `swift rlhf {val or 'config.yaml'} --other_flag ...` (flags after it override the file).")
    if key in RENAMED:
        new, why = RENAMED[key]
        return f"Replace `{shown}` with `--{new}{' ' + val if val else ''}` ({why})."
    if key in REMOVED:
        why = REMOVED[key]
        if key in ("vllm_device", "num_infer_workers"):
            n = nproc_per_node(run)
            vis = run.visible_gpus()
            nproc = f"NPROC_PER_NODE={vis}" if vis else "NPROC_PER_NODE = the number of visible GPUs"
            layout = f" ({vis} GPUs visible, NPROC_PER_NODE {n})" if vis and n else ""
            return (f"Drop `{shown}`: {why}. Choose a rollout mode instead{layout}: --use_vllm true --vllm_mode colocate "
                    f"(vLLM shares the training GPUs: {nproc}), or --vllm_mode server with a separate `swift rollout` "
                    f"on GPUs of its own (--vllm_server_host/--vllm_server_port).")
        return f"Drop `{shown}`: {why}."
    if key in ADDED:
        since, note = ADDED[key]
        ok = at_least(run, *since)
        if ok is not True:
            if key == "tuner_type":
                return f"Replace `{shown}` with `--train_type{' ' + val if val else ''}` ({note})."
            return (f"`{shown}`: {note}, and the ms-swift installed here is older. Upgrade "
                    f"(pip install -U 'ms-swift>={since[0]}.{since[1]}') or drop the flag.")
    if key in RLHF_FIELDS_4_6:
        return (f"`{shown}` is an argument of ms-swift 4.6 but not of the version installed here ({ver}): upgrade "
                f"ms-swift or drop the flag.")
    close = difflib.get_close_matches(key, RLHF_FIELDS_4_6, n=2, cutoff=0.75)
    if close:
        alts = " or ".join(f"--{c}" for c in close)
        return f"`{shown}` is not an argument of swift rlhf: did you mean {alts}?"
    return (f"`{shown}` is not an argument of swift rlhf ({ver}): check its spelling against the ms-swift "
            f"Command-line-parameters page for your version, or drop it.")


_CRLF_FIX = ("Convert the launch script to Unix line endings and run it again: `dos2unix train.sh` or "
             "`sed -i 's/\\r$//' train.sh` (an editor's 'LF' line-ending setting prevents it).",)


def _crlf(hits: list[Hit], tokens: list[str]) -> Diagnosis | None:
    """A script saved with Windows line endings: bash reads each line's carriage return as part of the last word,
    so a `\\`-continued command passes "\\r" to the program (and a line of its own runs a command named $'\\r')."""
    bash = any(h.groups.get("crlf") for h in hits)
    carried = [t for t in tokens if t.endswith("\r")]
    if not bash and not carried:
        return None
    what = (f"the program received {', '.join(repr(t) for t in carried)} as argument(s)" if carried else
            "bash ran each line's trailing carriage return as a command named $'\\r'")
    return Diagnosis(message=f"The launch script has Windows line endings (CRLF): {what}. A carriage return at the "
                             f"end of a `\\`-continued line becomes part of the next argument, so the parser sees an "
                             f"unknown argument (or a flag's value ends in \\r) although the flags are spelled "
                             f"right.", fix=_CRLF_FIX,
                     verify="the script runs without a `$'\\r'` line and the argument parser accepts its arguments")


# fields trl renamed (read from the wheels: trl/trainer/model_config.py ModelConfig has torch_dtype up to 0.24, both
# names in 0.23-0.24, dtype alone from 1.0, following transformers 4.56's own rename)
_RENAMED_HF = {"torch_dtype": ("dtype", "trl 1.0 renamed ModelConfig's torch_dtype to dtype (0.23-0.24 take both)")}


def _llamafactory(hit: Hit, tokens: list[str], version: str | None) -> Diagnosis:
    """LLaMA-Factory's parser refused flags (parse_args_into_dataclasses) or a config file's keys (parse_dict):
    each one read against its argument history, in the words the run used."""
    key = bool(hit.groups.get("keys"))
    flags, stray = ([(t, []) for t in tokens], []) if key else group_flags(tokens, short=True)
    said = []
    for n, _ in flags:
        got = lf.reading(n, version)
        name = lf.shown(n, [], key)
        said.append(f"`{name}` ({got[1]})" if got else f"`{name}`")
    ver = f"LLaMA-Factory {version}" if version else "LLaMA-Factory"
    what = "config key" if key else "command-line argument"
    if not said and stray:
        # nothing but values: their flags were lost on the way (no argument class is at fault)
        msg = (f"{ver}'s parser got {', '.join(repr(s) for s in stray)} as arguments of their own, without the "
               f"`--flag` each belongs to, and refuses them (HfArgumentParser hands back every token no argument "
               f"class takes); the run stops before loading the model.")
    else:
        msg = (f"{ver} does not know {', '.join(said) or ', '.join(repr(s) for s in stray) or '(an empty list)'}: "
               f"its parser (HfArgumentParser over its argument classes: ModelArguments, DataArguments, "
               f"FinetuningArguments, and for train transformers' Seq2SeqTrainingArguments) refuses a {what} that none "
               f"of them declares, and the run stops before loading the model.")
    fix = [lf.advice(n, v, version, key, flags) for n, v in flags]
    if stray:
        fix.append(f"{', '.join(repr(s) for s in stray)} came without a flag: a value with spaces that is not "
                   f"quoted, a broken line continuation, or a script path given twice after the launcher.")
    return Diagnosis(message=msg, fix=tuple(fix or ["Remove the arguments listed."]),
                     title=f"LLaMA-Factory does not know a {what} (renamed, removed or misspelt)",
                     verify="LLaMA-Factory parses its arguments (no `not used by the HfArgumentParser` line) and "
                            "starts loading the model")


def remaining_argv_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    run = ctx.run
    framework, fw_version = ctx.framework()[:2]
    if framework != "llamafactory":
        # a config file's keys refused (HfArgumentParser.parse_dict): read here for LLaMA-Factory only (GD990's
        # structural reading says it for the others)
        hits = [h for h in hits if not h.groups.get("keys")]
        if not hits:
            return None
    tokens = split_argv(hits[0].groups.get("argv") or "")
    crlf = _crlf(hits, tokens)
    if crlf is not None:
        return crlf
    if framework == "llamafactory" and (hits[0].groups.get("hf") or hits[0].groups.get("keys")):
        return _llamafactory(hits[0], tokens, fw_version)
    flags, stray = group_flags(tokens, short=True)
    names = ", ".join(_shown(n, []) for n, _ in flags) or ", ".join(repr(s) for s in stray) or "(empty list)"
    if hits[0].groups.get("hf") and run.command is None:
        # a trl / transformers script (HfArgumentParser without ms-swift): ms-swift's flag history does not apply
        fix = []
        frames = hits[0].exc.frames if hits[0].exc else ()
        trl = framework == "trl" or any("trl/" in f.path.replace("\\", "/") for f in frames)
        for n, v in flags:
            key = n.lstrip("-").replace("-", "_")
            close = difflib.get_close_matches(key, RLHF_FIELDS_4_6, n=2, cutoff=0.75)
            if key in _RENAMED_HF and trl:
                new, when = _RENAMED_HF[key]
                fix.append(f"`{_shown(n, v)}`: {when}: with trl 1.0 or later write `{_shown('--' + new, v)}`.")
            elif key == "local_rank":
                fix.append(f"`{_shown(n, v)}` was not typed by you: `python -m torch.distributed.launch` (torch 2.0 "
                           f"and later) adds it to each worker's command line, and these argument classes do not take "
                           f"it. Launch with `torchrun` and the same options instead: it passes the local rank in the "
                           f"LOCAL_RANK environment variable and adds no argument.")
            elif key == "vllm_device":
                fix.append(f"Drop `{_shown(n, v)}`: newer trl releases run vLLM either colocated (--vllm_mode "
                           f"colocate) or as a `trl vllm-serve` server (--vllm_mode server); see the GRPOConfig docs "
                           f"of the installed trl.")
            elif close and key not in close:
                fix.append(f"`{_shown(n, v)}` is not an argument of this script: did you mean "
                           f"{' or '.join('--' + c for c in close)}?")
            elif said := (None if trl or framework else lf.hint(n, v, flags)):   # no framework told
                fix.append(f"`{_shown(n, v)}` is not an argument of this script. {said}")
            else:
                fix.append(f"`{_shown(n, v)}` is not an argument of the installed script and library versions: "
                           f"check its spelling against the script's argument dataclasses, or drop it.")
        typed = ", ".join(f"`{_shown(n, [])}`" for n, _ in flags) or names   # as typed, not another framework's term
        return Diagnosis(
            message=f"The argument parser does not know {typed}: none of the script's argument dataclasses (those it "
                    f"gives HfArgumentParser: a TrainingArguments subclass such as trl's configs, and the script's "
                    f"own) has these fields in the installed version.",
            fix=tuple(fix or ["Remove the arguments listed."]),
            verify="the argument parser accepts the command (no `Some specified arguments are not used by the "
                   "HfArgumentParser` line)")
    msg = (f"{version_label(run)} does not know {names}: the parser hands back what no argument class accepted "
           f"(`remaining_argv`) and the run stops before loading the model (an almost empty output dir is left "
           f"behind).")
    fix = [flag_advice(n, v, run) for n, v in flags]
    if stray:
        fix.append(f"{', '.join(repr(s) for s in stray)} came without a flag: a value with spaces that is not "
                   f"quoted, or a broken line continuation (a `\\` missing at a line end, or a `# comment` line "
                   f"inside a multi-line command) separated it from its flag.")
    if not fix:
        fix = ["Remove the arguments listed in remaining_argv."]
    return Diagnosis(message=msg, fix=tuple(fix))
