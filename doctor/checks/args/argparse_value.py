"""GD402: argparse rejected a flag's value (not one of its choices, no value, wrong type, not a boolean)."""
from __future__ import annotations

import re

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

_CHOICE = lazyre.compile(r"invalid choice: '(?P<val>[^']*)' \(choose from (?P<ch>.*)\)")
_TYPE = lazyre.compile(r"invalid (?P<t>\w+) value: '(?P<val>[^']*)'")


_FLAG = lazyre.compile(r"--?([A-Za-z][\w-]*)")
# LLaMA-Factory's hparams/parser.py reads a config file only as the single argument ending in ".yaml" (0.7.1-0.9.0;
# ".yml" too from 0.9.1; other arguments after it from 0.9.3): anything else goes to argparse as flags
_LF_CONFIG = lazyre.compile(r"llama[ -]?factory-cli\s+\w+\s+(\S+?\.(?:ya?ml|json))\b(.*)", re.I)


def _config_not_read(required: str, ctx: RunState) -> Diagnosis | None:
    """Every argument the parser calls missing is set by the config the paste shows: the program did not read it."""
    names = [m.group(1).replace("-", "_") for m in _FLAG.finditer(required)]
    run = ctx.run
    if not names or not all(n in run.args for n in names):
        return None
    shown = ", ".join(f"{n}: {run.args[n]}" for n in names)
    lf = next((m for tail in ctx.tails.values() for ln in tail for m in [_LF_CONFIG.search(ln.text)] if m), None)
    msg = (f"The parser calls {required.strip()} missing, yet the config shown sets it ({shown}): the program did not "
           f"read that config file, so every value in it was ignored.")
    fix = ["Check how the config reaches the program: the path it was given (is it this file?), its extension, and "
           "whether the tool reads a config file given with other arguments after it."]
    if lf is not None:
        name = lf.group(1)
        msg += (f" LLaMA-Factory reads a config only when it is the command's single argument ending in .yaml "
                f"(0.7-0.9.0; .yml too from 0.9.1, other arguments after it from 0.9.3); here it was `{name}`"
                + (" with more arguments after it" if lf.group(2).strip(" .`") else "") + ".")
        fix.insert(0, f"Rename `{name}` to end in .yaml (or upgrade LLaMA-Factory to 0.9.1 or later) and pass it as "
                      f"the only argument: `llamafactory-cli train {name.rsplit('.', 1)[0]}.yaml`.")
    return Diagnosis(message=msg, fix=tuple(fix), title="The config file holding the required arguments was not read",
                     verify="the program prints the arguments from the config (or starts loading the model)")


def argparse_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    g = hits[0].groups
    if g.get("unrec"):
        return Diagnosis(
            message=f"The argument parser does not take `{g['unrec'].strip()}`: the script or tool that ran has no such "
                    f"argument (argparse's parse_args stops on any argument it does not know).",
            fix=("Drop or rename those arguments: `<command> --help` lists what the installed version takes (a flag "
                 "meant for another process, such as a trainer's vLLM flag given to a server, lands here too).",),
            title="The argument parser does not know these flags",
            verify="the argument parser accepts the command (no `unrecognized arguments` line)")
    if g.get("required"):
        unread = _config_not_read(g["required"], ctx)
        if unread is not None:
            return unread
        return Diagnosis(
            message=f"The command is missing required arguments: {g['required'].strip()}.",
            fix=(f"Give {g['required'].strip()} (a line continuation `\\` that broke the command cuts them off).",),
            title="The command lacks arguments the parser requires",
            verify="the argument parser accepts the command (no `the following arguments are required` line)")
    flag = (g.get("flag") or "").split("/")[0]
    detail = (g.get("detail") or "").strip()
    m = _CHOICE.search(detail)
    if m and not flag.startswith("-"):  # a positional: the subcommand of a command-line tool
        choices = re.findall(r"'([^']*)'", m.group("ch"))
        msg = (f"The installed command-line tool has no '{m.group('val')}' {flag}: its choices are "
               f"{', '.join(choices)}.")
        fix = [f"Check the spelling, or install the release that has '{m.group('val')}'."]
        if m.group("val") == "vllm-serve" and "grpo" in choices:
            # trl/cli.py gained the vllm-serve subcommand in trl 0.16 (trl/scripts/vllm_serve.py)
            msg += " trl's CLI gained `trl vllm-serve` in trl 0.16: the installed trl is older."
            fix = ["pip install -U 'trl[vllm]>=0.16' (and a vLLM release that trl release supports), then run "
                   "`trl vllm-serve --model ...` again."]
        return Diagnosis(message=msg, fix=tuple(fix))
    if m:
        choices = re.findall(r"'([^']*)'", m.group("ch")) or [c.strip() for c in m.group("ch").split(",")]
        msg = f"{flag} got '{m.group('val')}', which is not one of its choices: {', '.join(choices)}."
        fix = [f"Use {flag} " + " or ".join(choices) + " (the values are case-sensitive)."]
        if flag.replace("-", "_") == "--vllm_mode":
            fix.append("colocate: vLLM runs inside every training process on the same GPUs; server: a separate "
                       "`swift rollout` process on other GPUs, reached with --vllm_server_host/--vllm_server_port.")
        return Diagnosis(message=msg, fix=tuple(fix))
    if "expected one argument" in detail:
        return Diagnosis(
            message=f"{flag} was given without a value.",
            fix=(f"Give {flag} a value; a flag at the very end of a line whose next line starts with another "
                 f"--flag (or a value starting with '-', which must be quoted as {flag}=-1) causes this.",))
    m = _TYPE.search(detail)
    if m:
        return Diagnosis(
            message=f"{flag} got '{m.group('val')}', which is not a valid {m.group('t')}.",
            fix=(f"Give {flag} a {m.group('t')} value (check for a shell variable that expanded to nothing "
                 f"or to text).",))
    if "Truthy value expected" in detail:
        return Diagnosis(
            message=f"{flag} takes true/false, and got something else: {detail}",
            fix=(f"Use {flag} true or {flag} false.",))
    return Diagnosis(
        message=f"The argument parser rejected {flag or 'the command line'}: {detail}",
        fix=(f"Fix {flag or 'the flag'} as the parser says: {detail}",))
