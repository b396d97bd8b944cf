"""GD701: a full-parameter run that silently trains LoRA because load_args force-loads the tuner type.

swift-notes §2: with load_args on, ms-swift force-loads ``tuner_type`` (3.x: ``train_type``) from the first
args.json found in ``--adapters`` then ``--model``, overriding the command line. Training defaulted to
load_args=True in 3.0-3.1.x; from 3.2 only an explicit ``--load_args true`` (or a YAML/script that sets it)
does it. ``swift export --merge_lora`` copies the LoRA run's args.json into the merged folder, so a merged
model used as ``--model`` carries ``tuner_type: lora``. Seed 05 and real runs full_*_load_args_true.
"""
from __future__ import annotations

import posixpath
from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule, evidence_of
from ...signals import LogLine
from ...swift.run import tuner_flag, version_label

_LOADED = lazyre.compile(r"Successfully loaded (?P<path>.+?args\.json)\.?\s*$")
_PARAM_INFO = lazyre.compile(r"model_parameter_info: (?P<cls>[\w.]+): .*?\[(?P<pct>[\d.]+)%\]")
_SAVING = lazyre.compile(r"Saving model checkpoint to (?P<path>\S+)")
_LAST = lazyre.compile(r"last_model_checkpoint: (?P<path>\S+)")


def _is_full(v: Any) -> bool:
    return isinstance(v, str) and v.strip().strip("'\"").lower() == "full"


def _is_lora(v: Any) -> bool:
    return isinstance(v, str) and v.strip().strip("'\"").lower() in ("lora", "longlora", "adalora", "qlora")


class ForcedLora(Rule):
    kinds = frozenset({LogLine})
    per_run = True   # the load_args line and the LoRA config of one launch, never of two
    literals = ("Successfully loaded", "model_parameter_info:", "lora_config: LoraConfig(", "rank: ",
                "Saving model checkpoint to", "last_model_checkpoint:")

    def __init__(self, meta):
        super().__init__(meta)
        # (line, path) of the first "Successfully loaded" line, and of the first before the rank line: all finish
        # reads (a bounded state: a log may repeat the line thousands of times)
        self.first_loaded: tuple[LogLine, str] | None = None
        self.first_early: tuple[LogLine, str] | None = None
        self.rank_seen = False
        self.param_line: LogLine | None = None
        self.peft = False
        self.lora_cfg: LogLine | None = None
        self.last_ckpt: str | None = None   # the last checkpoint saved

    def feed(self, signal: Any) -> None:
        line: LogLine = signal
        t = line.text
        if "Successfully loaded" in t:
            m = _LOADED.search(t)
            if m:
                got = (line, m.group("path"))
                if self.first_loaded is None:
                    self.first_loaded = got
                if self.first_early is None and not self.rank_seen:
                    self.first_early = got
        elif "rank: " in t and "world_size: " in t:
            self.rank_seen = True
        elif "model_parameter_info:" in t and self.param_line is None:
            m = _PARAM_INFO.search(t)
            if m:
                self.param_line = line
                self.peft = m.group("cls").startswith("Peft")
        elif "lora_config: LoraConfig(" in t and self.lora_cfg is None:
            self.lora_cfg = line
        elif "Saving model checkpoint to" in t:
            m = _SAVING.search(t)
            if m:
                self.last_ckpt = m.group("path")
        elif "last_model_checkpoint:" in t:
            m = _LAST.search(t)
            if m and m.group("path") != "None":
                self.last_ckpt = m.group("path")

    def finish(self, ctx: RunState) -> list[Finding]:
        run = ctx.run
        asked_key = "tuner_type" if "tuner_type" in run.cli else "train_type"
        asked = run.cli.get(asked_key)
        if not _is_full(asked):
            return []
        resolved = run.args.get("tuner_type") if run.provenance.get("tuner_type") in ("dump", "args.json") else None
        if resolved is None and run.provenance.get("train_type") in ("dump", "args.json"):
            resolved = run.args.get("train_type")
        got_lora = _is_lora(resolved) or self.peft or self.lora_cfg is not None
        if not got_lora or (resolved is not None and _is_full(resolved) and not self.peft):
            return []
        ev: list[Evidence] = []
        src_line = self.first_early or self.first_loaded
        if src_line is not None:
            ev.append(evidence_of(src_line[0]))
        if self.lora_cfg is not None:
            ev.append(evidence_of(self.lora_cfg))
        if self.param_line is not None:
            ev.append(evidence_of(self.param_line))
        args_json = src_line[1] if src_line else None
        if args_json is None:
            d = adapters_dir(run) or run.get("model")
            if isinstance(d, str) and d:
                args_json = posixpath.join(d.rstrip("/"), "args.json")
        la = run.get("load_args")
        explicit = run.cli.get("load_args")
        mm = run.swift_major_minor
        if explicit is True or (isinstance(explicit, str) and explicit.lower() == "true"):
            why_on = "the command passes --load_args true"
        elif la is True and mm is not None and mm < (3, 2):
            why_on = f"{version_label(run)} training loads args by default (3.0-3.1.x; 3.2 changed the default to False)"
        elif la is True:
            why_on = "load_args is true in the resolved arguments (a config file or script sets it)"
        else:
            why_on = "load_args was on"
        flag = tuner_flag(run)
        what = []
        if _is_lora(resolved):
            what.append(f"the resolved arguments say {flag}={resolved}")
        if self.lora_cfg is not None:
            what.append("a LoraConfig was built")
        if self.param_line is not None and self.peft:
            what.append("the model is a PeftModel (only the adapter is trainable)")
        src = f"{args_json}" if args_json else "the args.json of the --model/--adapters directory"
        folder = posixpath.dirname(args_json) if args_json else ""
        if folder.rstrip("/").endswith("-merged"):
            origin = ("written by the LoRA run and copied into the merged folder by swift export --merge_lora")
        elif adapters_dir(run) and folder and folder.rstrip("/") == str(adapters_dir(run)).rstrip("/"):
            origin = "saved with that adapter by its LoRA run; --adapters is searched before --model"
        else:
            origin = "written by the LoRA run that produced that directory"
        msg = (f"The command asks for a full-parameter run (--{asked_key} full) but ms-swift trained LoRA: "
               f"{'; '.join(what)}. Because {why_on}, ms-swift force-loaded {flag} from {src} ({origin}), and it "
               f"overrides the command line. The checkpoints hold only adapter weights (tens of MB for a 7B model "
               f"instead of the full weights).")
        if ctx.preflight:
            msg = (f"The command asks for a full-parameter run (--{asked_key} full) but ms-swift will train LoRA: "
                   f"{src} says {flag}={resolved} ({origin}). Because {why_on}, ms-swift force-loads {flag} from it, "
                   f"overriding the command line, and the checkpoints will hold only adapter weights.")
        fix = ["Add --load_args false (or delete `--load_args true` / `load_args: true` from the script or YAML)."]
        if mm is not None and mm < (3, 2):
            fix[0] = ("Add --load_args false: ms-swift 3.0-3.1.x training loads args.json by default (3.2+ does not "
                      "unless asked).")
        if args_json:
            fix.append(f"Or rename {args_json} so nothing is force-loaded from it (then pass --model_type/--template "
                       f"yourself if they came from it).")
        a = adapters_dir(run)
        if a:
            fix.append(f"To train every weight starting from the LoRA: --model <base> --adapters {a} --{flag} full "
                       f"--load_args false (ms-swift merges the adapter into the base first; verified on 4.6.0).")
        where = self.last_ckpt or "checkpoint-N"
        fix.append(f"Check the result: the log must show `model_parameter_info: <Model>ForCausalLM ... [100.0000%]`, "
                   f"and {where} must hold model.safetensors (or model-0000x-of-0000y.safetensors), not "
                   f"adapter_model.safetensors.")
        if self.last_ckpt:
            fix.append(f"The LoRA already trained is not lost: swift export --adapters {self.last_ckpt} --merge_lora "
                       f"true gives full weights of that run.")
        return [self.make(message=msg, fix=fix, evidence=ev or (),
                          seq=(src_line[0].seq if src_line else (self.param_line.seq if self.param_line else 0)))]


def adapters_dir(run) -> str | None:
    a = run.get("adapters")
    if isinstance(a, list):
        return str(a[0]) if a else None
    return str(a) if a else None
