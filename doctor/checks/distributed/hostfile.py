"""GD314: DeepSpeed's launcher found no hostfile and trained on this machine alone, where the run shows it was meant to
span several hosts (a hostfile's `host slots=N` lines, --hostfile or --num_nodes in the command, the hostfile handed to
the script instead of the launcher). Pure: the hits and the kept lines in, a diagnosis out."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence
from ...rules import Diagnosis, Hit

# a hostfile's line as DeepSpeed parses it (launcher/runner.py _parse_hostfile: `^(\S+)\s+slots\s*=\s*(\d+)`)
_HOST_LINE = lazyre.compile(r"^\s*(?P<host>[^\s#=]+)\s+slots\s*=\s*(?P<slots>\d+)\s*$")
# the launcher's own `cmd = ... deepspeed.launcher.launch --world_info=... <args> script.py`: a path named hostfile
# before the script was given without its flag, so the launcher handed it on
_CMD = lazyre.compile(r"\bdeepspeed\.launcher\.launch\b.*?--master_port=\d+(?P<args>.*)$")
_HOSTFILE_ARG = lazyre.compile(r"(?:^|\s)(?P<path>\S*hostfile\S*)\s+\S+\.py\b")
_WORLD = lazyre.compile(r"WORLD INFO DICT: (?P<world>\{.*\})")
_NUM_NODES = lazyre.compile(r"--num_nodes[= ](?P<n>\d+)")


def hostfile_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    hosts: list[tuple[str, int, str]] = []
    given, world, nodes = None, None, None
    for tail in ctx.tails.values():
        for line in tail:
            text = line.text
            m = _HOST_LINE.match(text)
            if m:
                hosts.append((line.where.path, line.where.line, text.strip()))
            if "deepspeed.launcher.launch" in text:
                c = _CMD.search(text)
                a = _HOSTFILE_ARG.search(c.group("args")) if c else None
                if a:
                    given = (line, a.group("path"))
            w = _WORLD.search(text) if "WORLD INFO" in text else None
            if w:
                world = w.group("world")
            n = _NUM_NODES.search(text) if "--num_nodes" in text else None
            if n and int(n.group("n")) > 1:
                nodes = n.group("n")
    if not hosts and given is None and nodes is None:
        return None  # a one-machine run: the warning is DeepSpeed's usual note, no failure
    said = []
    if hosts:
        said.append(f"the paste shows a hostfile of {len(hosts)} host(s) (`{hosts[0][2][:80]}`)")
    if nodes:
        said.append(f"the command asks for --num_nodes {nodes}")
    msg = ("DeepSpeed's launcher found no hostfile (it reads the file --hostfile names, /job/hostfile by default) and "
           "went on with this machine's GPUs only" + (f" (`WORLD INFO DICT: {world[:80]}`)" if world else "")
           + (", while " + " and ".join(said) if said else "") + ".")
    if given is not None:
        msg += (f" The launcher's `cmd =` line shows `{given[1]}` before the script: the hostfile was given without "
                f"--hostfile=, so the launcher passed it to the training script as an argument instead of reading it.")
    fix = ("Give the hostfile to the launcher with its flag, before the script: `deepspeed --hostfile=/path/to/hostfile "
           "main.py ...`; each line is `<host> slots=<GPUs>`, and every host must accept password-less SSH from this "
           "node. The launcher's `WORLD INFO DICT` line then lists every host.",)
    evidence = tuple(Evidence(p, n, t) for p, n, t in hosts[:2])
    if given is not None:
        evidence += (Evidence(given[0].where.path, given[0].where.line, given[0].raw),)
    return Diagnosis(message=msg, fix=fix, evidence=evidence)
