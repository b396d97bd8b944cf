"""The run's configuration, collected from whatever the inputs reveal.

Sources, weakest first: ``command.txt`` (a launcher script as the user wrote it, read by sources/command_text.py), the ``run sh:``
launcher line, the ``[INFO:swift] args: RLHFArguments(`` dump, ``args.json``. A later, stronger
source overrides a weaker one; flags given on the command line are also kept apart (``cli``) because
"what was asked" and "what ran" differ exactly in the failures we look for (``load_args``).

Other frameworks' forms are read into the same fields (issue 29.5): ``accelerate launch`` / ``deepspeed`` /
``torchrun`` launchers and verl's / OpenRLHF's entry points with their Hydra overrides or flags
(sources/launchers.py), in a command file or a log line; trl / transformers config dumps (``GRPOConfig(``...) and
open-r1 recipes pasted in a log (sources/reprs.py). What a form implies about the framework is kept in ``implied``
(doctor/swift/framework.py weighs it with the frames and the log's wording).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from .. import lazyre
from ..signals import LogLine, Where
from ..swift.version import major_minor
from ..values import as_int
from . import launchers, reprs
from .argv import ENV_NAMES as _ENV_NAMES
from .argv import parse_value
from .command_text import SERVER_COMMANDS, Launch, read_command
from .dict_dump import LITERALS as DUMP_LITERALS
from .dict_dump import OVERRIDE_LINE, DictDump, NestedYaml
from .runs import RunSplit
from .versions_said import VERSION_WORDS, VersionsSaid

STRENGTH = {"command": 1, "launcher": 2, "dump": 3, "args.json": 4}
MAX_CONTINUED = 200  # continuation lines of one echoed launch read at most (a pasted script's is a few dozen)

_ENV = lazyre.compile(r"(?:^|[\s;])(?:export\s+)?(" + "|".join(_ENV_NAMES) + r")=(\"[^\"]*\"|'[^']*'|[^\s\\;]+)")
_RANK_LINE = lazyre.compile(r"rank: (-?\d+), local_rank: (-?\d+), world_size: (\d+), local_world_size: (\d+)")
_SWIFT_VERSION = lazyre.compile(r"swift\.__version__: (\d+\.\d+(?:\.\d+)?(?:\.?(?:dev|rc|post)\d*)?)")
# (`pip list` pads a package's name to its column: "vllm                     0.9.1")
_VLLM_VERSION = lazyre.compile(r"(?:vllm(?:==|-| version:? v?| +)|vLLM (?:version )?v?)(\d+\.\d+\.\d+)", re.I)
_TRL_VERSION = lazyre.compile(r"\btrl(?:==|-|(?<=^trl)\s{2,})(\d+\.\d+(?:\.\d+)?)")
_TRANSFORMERS_VERSION = lazyre.compile(r"\btransformers(?:==|-|(?<=^transformers)\s{2,})(\d+\.\d+(?:\.\d+)?)")
# LLaMA-Factory's release: its `llamafactory-cli env` report (its issue template: "- `llamafactory` version: 0.9.1.dev0")
# and a pinned requirement or wheel name (llamafactory==0.9.1, llmtuner==0.5.3 before 0.7)
_LLAMAFACTORY_VERSION = lazyre.compile(r"(?:`llamafactory` version:\s*|\b(?:llamafactory|llmtuner)(?:==|-))v?"
                                       r"(\d+\.\d+\.\d+(?:\.?dev\d*)?)")
# a sentence that advises or blames a release names a version other than the installed one
_ADVICE = lazyre.compile(r"(?i)\binstead\b|\bdowngrad\w*|\bupgrad\w* to\b|\brecommend\w*|\bshould\b|\bworks? "
                         r"(?:with|on|fine)\b|\bworked\b|\bpin(?:ned|ning)?\b|\bbreaks?\b|\bbroke\b|\breleased\b")
# "after updating vllm to 0.7.3 ...", "尝试更新vllm至0.7.3后": the release the author moved to is the one that ran, even
# when the same sentence names the release it left
_MOVED_TO = {name: lazyre.compile(r"(?i)(?:\bupdated|\bupgraded|\bupdating|\bupgrading|\bbumped|更新|升级)\s*(?:the\s+)?"
                                  + name + r"\s*(?:to|至|到)\s*(?:" + name + r"\s*)?(?:==\s*|v)?(\d+\.\d+\.\d+)")
             for name in ("vllm", "trl", "transformers")}
_DUMP_START = lazyre.compile(r"args: (RLHFArguments|SftArguments|TrainArguments|RLHFArguments)\($")
_DUMP_KV = lazyre.compile(r"^(\w+)=(.*?),?$")
# traceback / log path fingerprints (swift-notes §7)
_V3_PATHS = ("swift/llm/", "swift/trainers/rlhf_trainer/", "swift/trainers/rlhf_arguments.py", "swift/plugin/")
_V4_PATHS = ("swift/arguments/", "swift/pipelines/", "swift/rlhf_trainers/", "swift/rewards/")
# 2.x modules that 3.0 moved (llm/utils/ became llm/utils.py and llm/{model,template,dataset}/; the entry points moved
# into llm/train/, llm/infer/, llm/export/): their frames tell a 2.x install
_V2_PATHS = ("swift/llm/utils/", "swift/llm/sft.py", "swift/llm/rlhf.py", "swift/llm/deploy.py", "swift/llm/infer.py",
             "swift/llm/export.py")

# a launch of ms-swift, or of trl's / vLLM's server, pasted or echoed on a log line ("CUDA_VISIBLE_DEVICES=0 swift rlhf
# --rlhf_type grpo ...", "trl vllm-serve --model ... --port 8001"): read from its first environment assignment on, never
# from a prompt, timestamp or rank prefix before it. Only a command: flags or a continuation follow the subcommand
# (not "I ran swift rlhf to ...", not argparse's "usage: vllm serve [-h]", not a traceback's .../swift/cli/rlhf.py)
_TOOL_LITERALS = ("swift rlhf", "swift sft", "swift pt", "swift rollout", "swift infer", "swift deploy", "swift export",
                "vllm-serve", "vllm serve")
_TOOL_LAUNCH = lazyre.compile(r"(?:^|(?<=[\s;&|(`'\"$]))(?:(?:export\s+)?[A-Z][A-Z0-9_]*=\S+\s+)*"
                              r"(?:swift\s+(?P<sub>rlhf|sft|pt|rollout|infer|deploy|export)|trl\s+(?P<trl>vllm-serve)|"
                              r"vllm\s+(?P<vllm>serve)(?:\s+(?![-\\])[\w./~:@+-]+)?)"
                              r"(?=\s+--?[A-Za-z]|\s*\\?\s*$)")
_ENV_BEFORE = lazyre.compile(r"(?:(?<=\s)|^)(?:(?:export\s+)?[A-Z][A-Z0-9_]*=[^\s;]+\s+)+$")
_ENV_ONLY = lazyre.compile(r"\s*(?:(?:export\s+)?[A-Z][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|[^\s\\;]+)\s*)+")
_URL_PORT = lazyre.compile(r"^\w+://[^/\s]+:(\d{2,5})\b")
_TOOL_WORDS = lazyre.compile("|".join(map(re.escape, _TOOL_LITERALS)))

LITERALS = (("run sh:", "args: ", "rank: ", "__version__", "swift/", "vllm", "vLLM", "trl", "transformers", "llamafactory",
             "llmtuner") + VERSION_WORDS + _ENV_NAMES
            + _TOOL_LITERALS + launchers.LITERALS + reprs.LITERALS + reprs.YAML_LITERALS + DUMP_LITERALS)



# one C-level search per line instead of a test per word: every line of a log passes here
_REPR_WORDS = lazyre.compile("|".join(map(re.escape, reprs.LITERALS)))
_LAUNCH_WORDS = lazyre.compile("|".join(map(re.escape, launchers.LITERALS)))


def _server_start(match: re.Match[str]) -> bool:
    """The launch found is a model server's (``swift rollout``, ``trl vllm-serve``, ``vllm serve``)."""
    return any(name in SERVER_COMMANDS for name in match.groupdict().values())


# a launch quoted as markdown inline code, after an optional list marker ("- ` accelerate launch ...`"): what a person
# typed into an issue, not a line the run printed
_QUOTED_LAUNCH = lazyre.compile(r"^\s*(?:[-*+>]\s+|\d+[.)]\s+)?`+\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*$")


def _env_continued(text: str) -> bool:
    """Only shell assignments on the line, continued onto the next with a backslash."""
    stripped = text.rstrip()
    return stripped.endswith("\\") and "=" in stripped and _ENV_ONLY.fullmatch(stripped[:-1]) is not None


def _launch_in(text: str) -> tuple[re.Match[str] | None, str]:
    """The first launch on a line and how it got there: another framework's launcher echoed by the log
    ("launcher"), else a `swift rlhf` / `trl vllm-serve` line, which is what a person pastes ("command": the programs
    do not echo it; ms-swift's own echo is `run sh:`)."""
    lm = launchers.LAUNCH_START.search(text) if _LAUNCH_WORDS.search(text) else None
    if lm is not None:
        # LLaMA-Factory's CLI prints no echo of its own command line: a `llamafactory-cli train` line is one a person
        # typed or pasted, so it does not make the input a whole log
        # (nor its older entry points: `python src/train_bash.py --stage sft ...`, which print no echo either)
        typed = launchers.LLAMAFACTORY_CLI.match(lm.group(0)) or "src/train" in lm.group(0)
        return lm, "command" if typed else "launcher"
    return (_TOOL_LAUNCH.search(text) if _TOOL_WORDS.search(text) else None), "command"


@dataclass
class RunConfig:
    """What we know about the run. ``args`` holds resolved values; ``cli`` what the user typed."""

    args: dict[str, Any] = field(default_factory=dict)
    cli: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # package -> releases ("3.5-3.11") where the log printed no version: inferred from the wording of its errors
    # (doctor/classify/provenance.py), never read; swift/run.py uses it for flag names when the version is unknown
    inferred_versions: dict[str, str] = field(default_factory=dict)
    major_hint: int | None = None          # 3 or 4, from paths and argument names
    world_size_seen: int | None = None     # from the "rank: .. world_size: N" line
    command: str | None = None             # "rlhf", "sft", ...
    torchrun: dict[str, Any] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)  # each launch in command.txt: trainer, rollout server...
    launch_printed: bool = False           # a launch read from a log's own lines (`run sh:`, an echoed command)
    command_texts: list[str] = field(default_factory=list)  # raw command.txt / launcher texts (first few, capped)
    # runs appended to one log (issue 17.16), doctor/sources/runs.py: where each starts, and the args of each finished one
    runs: RunSplit = field(default_factory=RunSplit)
    # framework -> the form that implies it (a verl entry point, a GRPOConfig dump...): framework.py's evidence
    implied: dict[str, str] = field(default_factory=dict)
    launcher: str | None = None            # accelerate | deepspeed | torchrun | python, for a non-swift launch
    _dump_open: bool = False
    _dump_class: str | None = None         # the trl / transformers class of an open dump (None: ms-swift's)
    _yaml: reprs.YamlBlock = field(default_factory=reprs.YamlBlock)
    _pending_launch: list[str] | None = None  # a launch echoed over lines ending in a backslash, read once it ends
    _pending_source: str = "launcher"
    _dict_dump: DictDump = field(default_factory=DictDump)
    _nested_yaml: NestedYaml = field(default_factory=NestedYaml)
    pasted_launches: list[Launch] = field(default_factory=list)  # launches a person pasted among an excerpt's lines
    _versions_said: VersionsSaid = field(default_factory=VersionsSaid)  # environment reports and pip's listings
    _env_prefix: list[str] = field(default_factory=list)  # `CUDA_VISIBLE_DEVICES=0,1 \` lines: the next command's

    # ---------------------------------------------------------------- setters
    def set_arg(self, key: str, value: Any, source: str) -> None:
        old = self.provenance.get(key)
        if old is not None and STRENGTH.get(old, 0) > STRENGTH.get(source, 0):
            return
        self.args[key] = value
        self.provenance[key] = source
        if key in ("tuner_type",):
            self._hint(4)
        if key == "swift_version" and isinstance(value, str):
            self.versions.setdefault("ms-swift", value)

    def _hint(self, major: int) -> None:
        if self.major_hint is None:
            self.major_hint = major

    def add_command(self, text: str, source: str = "command", *, on_a_line: bool = False) -> bool:
        """A launcher script or a command line: env assignments, torchrun args and swift flags. ``on_a_line``: a
        command found on a log line. True when it was a rollout server's launch line, kept apart from the trainer's
        settings."""
        if len(self.command_texts) < 4:
            self.command_texts.append(text[:200_000])
        read = read_command(text)
        # (a sentence naming `torchrun` reaches here too: only a command that parses is a launch)
        self.launch_printed = self.launch_printed or (source == "launcher" and bool(read.launches or read.launch))
        if on_a_line and read.launches and read.launch is None and all(
                launch.command in SERVER_COMMANDS for launch in read.launches):
            # a rollout server's own launch line beside the trainer's: the server's GPUs, port and model are its
            # launch's (``server_port``, the GPU layout check), never the trainer's settings
            for launch in read.launches:
                if launch not in self.launches:
                    self.launches.append(launch)
                if source == "command":
                    self.pasted_launches.append(launch)
            return True
        # the trainer's own environment first: a rollout server's launch in the same script has its own GPUs
        for launch in read.launches:
            if launch.command not in SERVER_COMMANDS:
                for k, v in launch.env.items():
                    self.env.setdefault(k, v)
                break
        for k, v in read.env:
            self.env.setdefault(k, v)
        for launch in read.launches:
            if launch not in self.launches:
                self.launches.append(launch)
            if on_a_line and source == "command":
                self.pasted_launches.append(launch)
        for k, v in read.yaml.items():  # a pasted YAML config (trl recipes, swift config files)
            if k not in self.args:
                self.cli.setdefault(k, v)
                self.set_arg(k, v, source)
        if "stage" in read.yaml and "finetuning_type" in read.yaml:
            # LLaMA-Factory's own arguments (src/llamafactory/hparams/finetuning_args.py FinetuningArguments: stage,
            # finetuning_type), the keys of every config under its examples/
            self.implied.setdefault("llamafactory", "LLaMA-Factory config")
        if read.launch is not None:
            self._add_launch(read.launch, source)
            return False
        if read.command is not None:
            self.command = self.command or read.command
            self.torchrun.update(read.torchrun)
        for k, v in (read.flags or {}).items():
            self.cli.setdefault(k, v)
            self.set_arg(k, v, source)
        return False

    def _add_launch(self, read: launchers.LaunchRead, source: str) -> None:
        """A launch of another framework: its layout (the launcher's own options: a world size is never read from
        the program's flags), its settings (own names and the rules' names) and the framework it implies."""
        args, layout = launchers.run_facts(read)
        for k in ("nproc_per_node", "nnodes", "node_rank", "master_port", "master_addr", "gpus_placed"):
            if k in layout:
                self.torchrun.setdefault(k, layout[k])
        for k, v in args.items():
            self.cli.setdefault(k, v)
            self.set_arg(k, v, source)
        self.launcher = self.launcher or read.launcher
        if read.framework:
            self.implied.setdefault(read.framework, read.program or read.launcher)
        if read.recipe:
            self.implied.setdefault(read.recipe, read.program or read.launcher)

    def _add_settings(self, pairs: list[tuple[str, Any]], framework: str | None, source: str) -> None:
        """Dotted settings read from a printed or pasted configuration (sources/dict_dump.py), as its overrides."""
        if pairs:
            self._add_launch(launchers.printed_config(dict(pairs), framework), source)

    def add_args_json(self, obj: dict[str, Any]) -> None:
        for k, v in obj.items():
            self.set_arg(k, v, "args.json")
        if "swift_version" in obj:
            self._hint(4)
        elif "train_type" in obj and "tuner_type" not in obj:
            self._hint(3)

    def at(self, where: Where) -> RunConfig:
        """The configuration of the run that holds ``where`` when several runs were appended to one log (issue
        17.16): that run's arguments instead of the last run's (none when they were not kept: never another
        run's). ``self`` for the last run or a log of one run."""
        i = self.runs.index_of(where)
        if i is None or i == len(self.runs) - 1:
            return self
        parts = self.runs.parts_of(i) or {}
        return replace(self, args=self.runs.args_of(i, self.args) or {}, **parts)

    def _parts(self) -> dict[str, Any]:
        """What belongs to one launch besides its resolved arguments: kept for each ended run of an appended log."""
        return {"cli": dict(self.cli), "env": dict(self.env), "provenance": dict(self.provenance),
                "launches": list(self.launches)}

    def _start_run(self, where: Where, *, dump: bool) -> None:
        """A run starts at ``where``; another run in the same log starts its configuration afresh (only what the
        run folder's args.json said stays: the folder's run is the last one), so no flag of one launch is read as
        another's."""
        if self.runs.start(where, self.args, dump=dump, current_parts=self._parts()):
            kept = {k for k, src in self.provenance.items() if src == "args.json"}
            self.args = {k: v for k, v in self.args.items() if k in kept}
            self.provenance = {k: "args.json" for k in kept}
            self.cli, self.env, self.launches, self.pasted_launches = {}, {}, [], []

    # ---------------------------------------------------------------- log lines
    def continuing(self) -> bool:
        """A command is open over lines ending in a backslash, or a printed or pasted nested config is being read:
        the next line belongs to it whatever it holds."""
        return self._pending_launch is not None or bool(self._env_prefix) or self._dict_dump.active \
            or self._nested_yaml.active

    @property
    def launch_open(self) -> bool:
        """A launch echoed over several lines is being read (its flag lines are its own, nothing else)."""
        return self._pending_launch is not None

    def _read_env(self, text: str) -> None:
        for m in _ENV.finditer(text):
            self.env.setdefault(m.group(1), m.group(2).strip("'\""))

    def feed(self, line: LogLine) -> None:
        text = line.text
        if self._env_prefix and self._pending_launch is None and not _env_continued(text):
            # assignments continued onto a launch are that launch's (a rollout server's GPUs are not the trainer's):
            # read with it, into its Launch; before anything else they are the shell's
            prefix, self._env_prefix = self._env_prefix, []
            start, _ = _launch_in(text)
            if start is not None and not text[:start.start()].strip():
                text = " ".join(prefix) + " " + text.lstrip()
            else:
                for part in prefix:
                    self._read_env(part)
        if self._pending_launch is not None:
            # the shell's continuation: the command goes on until a line that does not end in a backslash
            part = text.strip().strip("`")
            more = part.endswith("\\") and len(self._pending_launch) < MAX_CONTINUED
            self._pending_launch.append(part[:-1].strip() if part.endswith("\\") else part)
            if more:
                return
            joined, self._pending_launch = " ".join(self._pending_launch), None
            if joined not in self.command_texts:
                self.add_command(joined, self._pending_source, on_a_line=True)
            return
        if text[:2] == "{'" or self._dict_dump.active:
            pairs = self._dict_dump.feed(text)
            if pairs is not None:
                self._add_settings(pairs, self._dict_dump.framework, "dump")
                return
        if "=" in text and "." in text[:24]:
            override = OVERRIDE_LINE.match(text)
            if override is not None:  # a verl override pasted alone on its line: what the person set
                self._add_settings([(override.group(1), parse_value(override.group(2).strip("'\"")))], "verl", "command")
                return
        if self._nested_yaml.active or (text[-1:] == ":" and text[:1].isalpha()):
            pairs = self._nested_yaml.feed(text)
            if pairs is not None:
                # a config someone pasted: what they wrote, weaker than what the program printed
                self._add_settings(pairs, self._nested_yaml.framework, "command")
                return
        if self._dump_open:
            s = text.strip()
            if s == ")":
                self._dump_open = False
                return
            m = _DUMP_KV.match(s)
            if m and self._dump_class is not None:  # trl / transformers: enums and unquoted strings
                self.set_arg(m.group(1), reprs.value(m.group(2)), "dump")
            elif m:
                key = m.group(1)
                self.set_arg(key, parse_value(m.group(2)), "dump")
                if key == "tuner_type":
                    self._hint(4)
                elif key == "train_type" and m.group(2).strip() != "None" and "tuner_type" not in self.args:
                    self._hint(3)
            elif s.startswith("[") or s.startswith("Traceback"):
                self._dump_open = False
            return
        if "args: " in text and text.rstrip().endswith("("):
            if _DUMP_START.search(text.rstrip()):
                self._start_run(line.where, dump=True)
                self._dump_open = True
                self._dump_class = None
                return
        if "(" in text and _REPR_WORDS.search(text) and self._read_dump(text):
            return
        if ":" in text and text[:1].islower():
            for k, v in self._yaml.feed(text, line.where.path, line.where.line).items():
                self.set_arg(k, v, "command")  # a pasted recipe: what the user wrote, weaker than a dump
            if self._yaml.open == "llamafactory":
                self.implied.setdefault("llamafactory", "LLaMA-Factory config")
        if text.startswith("run sh: "):
            self._start_run(line.where, dump=False)
            body = text[len("run sh: "):].strip().strip("`")
            self.add_command(body, "launcher")
            return
        if launchers.HYDRA_OVERRIDES in text:
            hydra = launchers.read_hydra_overrides(text)
            if hydra is not None:
                self._add_launch(hydra, "command")
                return
        lm, source = _launch_in(text)
        if lm is not None and source == "launcher" and _QUOTED_LAUNCH.match(text[:lm.start()]):
            # a command a person quoted in markdown (`- \` accelerate launch ...\``), not the run's echo
            source = "command"
            text = text.rstrip().rstrip("`")
        if lm is not None:
            # the assignments right before a launcher are its environment (`CUDA_VISIBLE_DEVICES=1,2 accelerate ...`)
            env = _ENV_BEFORE.search(text, 0, lm.start()) if source == "launcher" and lm.start() else None
            start = env.start() if env is not None else lm.start()
            if source == "launcher" and not text[:start].strip(" \t`$"):
                # a launch that opens its line is one a person typed or pasted (a script, an issue's command): what
                # a program echoes of its launch carries a prefix (bash's `+ `, DeepSpeed's `cmd = `, ms-swift's
                # `run sh:`, a logger's head), as does a terminal session's prompt before the output that follows
                source = "command"
            if text[start:].rstrip().endswith("\\"):
                self._pending_launch = [text[start:].rstrip()[:-1].strip()]  # read whole, at its last line
                self._pending_source = source
                if _server_start(lm):
                    return
            elif text[start:] not in self.command_texts and self.add_command(text[start:], source, on_a_line=True):
                # a launch echoed in the log (`set -x`, a ps listing, a pasted command): read from its launcher on,
                # never from the timestamp or prefix before it; a rollout server's line says nothing more of the run
                return
        if "rank: " in text and "world_size: " in text:
            m = _RANK_LINE.search(text)
            if m:
                self.world_size_seen = max(self.world_size_seen or 0, int(m.group(3)))
                return
        if "__version__" in text:
            m = _SWIFT_VERSION.search(text)
            if m:
                self.versions["ms-swift"] = m.group(1)
                self._hint(int(m.group(1).split(".")[0]))
                return
        if "swift/" in text:
            if any(p in text for p in _V4_PATHS):
                self._hint(4)
            elif any(p in text for p in _V2_PATHS):
                self._hint(2)
            elif any(p in text for p in _V3_PATHS):
                self._hint(3)
        if "=" in text and _env_continued(text) and len(self._env_prefix) < 16:
            # any assignment continued onto the next line (PYTORCH_CUDA_ALLOC_CONF between NPROC_PER_NODE and
            # CUDA_VISIBLE_DEVICES): the whole chain is the environment of the launch it prefixes
            self._env_prefix.append(text.rstrip()[:-1].strip())
            return
        if "=" in text and any(n in text for n in _ENV_NAMES) and ("swift" in text or text.lstrip().startswith(_ENV_NAMES) or "export" in text):
            self._read_env(text)
        if ("llamafactory" in text or "llmtuner" in text) and "llamafactory" not in self.versions:
            m = _LLAMAFACTORY_VERSION.search(text)
            if m is not None and not _ADVICE.search(text):
                self.versions["llamafactory"] = m.group(1)
        said = self._versions_said.read(text)
        if said is not None:
            # a report of what is installed (an environment report, pip's listing) outranks a version named in passing
            self.versions[said[0]] = said[1]
            return
        for name, version in VersionsSaid.used_in(text):
            self.versions.setdefault(name, version)
        for name, rx, seen in (("vllm", _VLLM_VERSION, "vllm" in text.lower()), ("trl", _TRL_VERSION, "trl" in text),
                               ("transformers", _TRANSFORMERS_VERSION, "transformers" in text)):
            m = rx.search(text) if seen and name not in self.versions else None
            moved = _MOVED_TO[name].search(text) if m is not None else None
            if moved is not None:
                self.versions[name] = moved.group(1)
            # "simply install `vllm==0.7.3` instead": a version advised or blamed, not the one installed
            elif m is not None and not _ADVICE.search(text):
                self.versions[name] = m.group(1)

    def _read_dump(self, text: str) -> bool:
        """A trl / transformers config dump starting on this line: the multi-line form opens (its fields follow),
        the one-line form is read at once. True when the line was one."""
        start = reprs.dump_start(text)
        if start is None:
            return False
        cls, whole = start
        if whole:
            got = reprs.one_line(text)
            if got is None:
                return False
            for k, v in got[1].items():
                self.set_arg(k, v, "dump")
        else:
            self._dump_open = True
            self._dump_class = cls
        fw = reprs.CLASSES.get(cls)
        if fw:
            self.implied.setdefault(fw, f"{cls} dump")
        return True

    # ---------------------------------------------------------------- derived views
    def get(self, key: str, default: Any = None) -> Any:
        v = self.args.get(key)
        return default if v is None else v

    def server_port(self) -> int | None:
        """The rollout server's HTTP port as the run shows it: the trainer's --vllm_server_port, the port of its
        --vllm_server_base_url, else the --port of a server launch it read (``swift rollout``, ``trl vllm-serve``,
        ``vllm serve``); None when none shows it (the callers say which default they assume)."""
        port = as_int(self.get("vllm_server_port"))
        if port is not None:
            return port
        url = _URL_PORT.search(str(self.get("vllm_server_base_url") or ""))
        if url is not None:
            return int(url.group(1))
        ports = (as_int(x.flags.get("port")) for x in self.launches if x.command in SERVER_COMMANDS)
        return next((p for p in ports if p is not None), None)

    def vllm_server(self) -> bool:
        """The run generates on a separate vLLM rollout server: vllm_mode server, or a server host or URL given."""
        return (str(self.get("vllm_mode", "")).lower() == "server" or bool(self.get("vllm_server_host"))
                or bool(self.get("vllm_server_base_url")))

    def int_arg(self, key: str, default: int | None = None) -> int | None:
        v = self.args.get(key)
        if isinstance(v, bool):
            return default
        if isinstance(v, (int, float)):
            return int(v)
        if isinstance(v, str):
            try:
                return int(float(v))
            except ValueError:
                return default
        return default

    @property
    def swift_version(self) -> str | None:
        return self.versions.get("ms-swift")

    @property
    def swift_major_minor(self) -> tuple[int, int] | None:
        return major_minor(self.swift_version)

    @property
    def major(self) -> int | None:
        mm = self.swift_major_minor
        return mm[0] if mm else self.major_hint

    def _env_int(self, name: str) -> int | None:
        v = self.env.get(name)
        try:
            return int(v) if v is not None else None
        except ValueError:
            return None

    def visible_gpus(self) -> int | None:
        v = self.env.get("CUDA_VISIBLE_DEVICES") or self.env.get("ASCEND_RT_VISIBLE_DEVICES")
        if not v:
            return None
        return len([x for x in v.split(",") if x.strip()])

    def world_size(self) -> int | None:
        """Training processes: the rank line, else NPROC_PER_NODE x NNODES, else the torchrun args."""
        if self.world_size_seen:
            return self.world_size_seen
        nproc = self._env_int("NPROC_PER_NODE") or as_int(self.torchrun.get("nproc_per_node"))
        nnodes = self._env_int("NNODES") or as_int(self.torchrun.get("nnodes")) or 1
        if nproc:
            return nproc * nnodes
        return None

    def tuner(self) -> str | None:
        v = self.args.get("tuner_type") or self.args.get("train_type")
        return str(v) if v else None

    def summary(self) -> dict[str, Any]:
        """The ``run`` object of the JSON report."""
        return {
            "framework": "ms-swift",
            "framework_version": self.swift_version,
            "framework_major": self.major,
            "versions": dict(sorted(self.versions.items())),
            "command": self.command,
            "args": {k: _jsonable(self.args[k]) for k in sorted(self.args) if k in _SUMMARY_KEYS},
            "env": dict(sorted(self.env.items())),
            "world_size": self.world_size(),
        }


_SUMMARY_KEYS = frozenset({
    "rlhf_type", "model", "tuner_type", "train_type", "num_generations", "num_generations_eval",
    "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "steps_per_generation", "generation_batch_size", "use_vllm", "vllm_mode", "vllm_gpu_memory_utilization",
    "vllm_tensor_parallel_size", "sleep_level", "deepspeed", "load_args", "save_only_model", "save_total_limit",
    "max_length", "max_completion_length", "temperature", "beta", "reward_funcs", "torch_dtype",
    "adapters", "eval_strategy", "split_dataset_ratio", "val_dataset", "offload_model", "offload_optimizer",
})


def _jsonable(v: Any) -> Any:
    try:
        json.dumps(v)
        return v
    except (TypeError, ValueError):
        return repr(v)
