"""GD801 / GD805: the checkpoint holds the other kind of weights than the run meant: a LoRA adapter where a full
model was meant (load_args forced tuner_type from an old args.json), or full weights where an adapter was expected."""
from __future__ import annotations

import json
import posixpath
from typing import Any

from ...engine.state import RunState
from ...model import Finding, Severity
from ...signals import CheckpointInput
from ...sources.checkpoint import CheckpointFacts
from ...swift.version import major_minor
from ._base import CkptRule, ev_at
from ._facts import (
    DTYPE_WIDTH,
    base_dtype,
    expected_full_params,
    fmt_bytes,
    fmt_params,
    intent,
    kind,
    newest_per_run,
    parts,
    swift_version,
    tuner_value,
)


# ------------------------------------------------------------------------------------------ GD801
class AdapterOnly(CkptRule):
    """A run meant to train every weight saved a LoRA adapter (load_args force-loaded tuner_type)."""

    def finish(self, ctx: RunState) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            adapters = [i for i in group if kind(i.facts) == "adapter"]
            if not adapters:
                continue
            f = adapters[-1].facts
            want, why_want = intent(adapters[-1], ctx.run if ctx.run.cli or ctx.run.args else None)
            args = f.args if isinstance(f.args, dict) else {}
            resolved = tuner_value(args.get("tuner_type") or args.get("train_type"))
            load_args = args.get("load_args") is True
            if want == "lora" or (want is None and not (load_args and resolved == "lora")):
                continue
            severity = Severity.error if want == "full" else Severity.warning
            out.append(self._finding(f, adapters, args, want, why_want, severity, ctx))
        return out

    def _finding(self, f: CheckpointFacts, adapters: list[CheckpointInput], args: dict[str, Any], want: str | None,
                 why_want: str, severity: Severity, ctx: RunState) -> Finding:
        flag = "train_type" if ("train_type" in args and "tuner_type" not in args) else "tuner_type"
        ad_name = f.adapter_files()[0]
        ad_size = f.files[ad_name].size
        h = f.headers.get(ad_name)
        acfg = f.json("adapter_config.json") if isinstance(f.json("adapter_config.json"), dict) else {}
        ad_params = h.numel if h is not None and h.ok else None
        names = ", ".join(i.facts.name for i in adapters)
        detail = ([f"{fmt_params(ad_params)} params"] if ad_params else []) + (
            [f"r={acfg.get('r')}"] if acfg.get("r") else [])
        what = (f"{names} hold{'s' if len(adapters) == 1 else ''} only a LoRA adapter: {ad_name} "
                f"{fmt_bytes(ad_size)}" + (f" ({', '.join(detail)})" if detail else "") + ", and no model*.safetensors")
        n_full, n_src = expected_full_params(f)
        if n_full:
            width = DTYPE_WIDTH.get(base_dtype(f)[0] or "BF16", 2)
            what += f"; full weights would be {fmt_params(n_full)} params, about {fmt_bytes(n_full * width)}"
        ver = swift_version(args)
        mm = major_minor(ver)
        model = args.get("model") if isinstance(args.get("model"), str) else None
        adapters_arg = args.get("adapters")
        adapters_dir = adapters_arg[0] if isinstance(adapters_arg, list) and adapters_arg else (
            adapters_arg if isinstance(adapters_arg, str) and adapters_arg else None)
        src_dir = adapters_dir or model
        src = posixpath.join(src_dir.rstrip("/"), "args.json") if src_dir else "the --model/--adapters args.json"
        if args.get("load_args") is True:
            if mm is not None and mm >= (3, 2):
                why_on = (f"args.json records load_args=true: ms-swift {ver} training loads args only when asked, so "
                          f"the command or its YAML passed --load_args true")
            elif mm is not None:
                why_on = f"ms-swift {ver} training loads args by default (3.0-3.1.x; 3.2 made it opt-in)"
            else:
                why_on = ("args.json records load_args=true (ms-swift 3.0-3.1.x training does this by default; from "
                          "3.2 only an explicit --load_args true does)")
            origin = (" (the LoRA run's args.json, copied into the merged folder by swift export --merge_lora)"
                      if src_dir and src_dir.rstrip("/").endswith("-merged") else
                      " (saved with that adapter by its LoRA run; --adapters is searched before --model)"
                      if adapters_dir else "")
            cause = (f"{why_on}; ms-swift then force-loads {flag} from {src}{origin}, overriding the command line, "
                     f"and the resolved {flag} is {args.get(flag)!s}.")
        elif args:
            cause = (f"args.json records {flag}={args.get(flag)!s} and load_args={json.dumps(args.get('load_args'))}: the "
                     f"command that wrote it did not get --{flag} full (ms-swift's default is lora).")
        else:
            cause = "The checkpoint has no args.json to say why."
        if severity == Severity.error:
            msg = f"The run was meant to train every weight ({why_want}), but {what}. {cause}"
        else:
            msg = (f"{what}. {cause} If the run was meant to be full-parameter, the adapter came from that file, "
                   f"not from the command line (pass --expect full or lora to check-ckpt to decide).")
        fix = []
        if args.get("load_args") is True:
            fix.append("Add --load_args false (or delete `--load_args true` / `load_args: true` from the script or "
                       "YAML)" + (": ms-swift 3.0-3.1.x training loads args.json by default" if mm and mm < (3, 2)
                                  else "") + f", and keep --{flag} full.")
            if src_dir:
                fix.append(f"Or rename {src} so nothing is force-loaded from it (then pass --model_type/--template "
                           f"yourself if they came from it).")
        elif tuner_value(ctx.run.cli.get("tuner_type") or ctx.run.cli.get("train_type")) == "full":
            # the command read here already asks for full weights (issue 29.2: never "pass --X V" where X is V)
            fix.append(f"The command read here already passes --{flag} full, but {f.name}'s args.json records "
                       f"{flag}={args.get(flag)!s}: another launch wrote this checkpoint (an earlier run into the same "
                       f"output directory, or a script other than the one read here); check which command ran, and "
                       f"run this one into a fresh --output_dir.")
        else:
            fix.append(f"Pass --{flag} full explicitly.")
        if adapters_dir:
            fix.append(f"To train every weight starting from that LoRA: --model <base> --adapters {adapters_dir} "
                       f"--{flag} full --load_args false (ms-swift merges the adapter first).")
        fix.append(f"The LoRA already trained is not lost: swift export --adapters {f.path} --merge_lora true gives "
                   f"full weights of this run.")
        fix.append(f"Check the next checkpoint: grpo-doctor check-ckpt <checkpoint> --expect full (it must hold "
                   f"model.safetensors or model-0000x-of-0000y.safetensors, not {ad_name}).")
        ev = [ev_at(i.facts, ad_name, f"{ad_name} {fmt_bytes(i.facts.files[ad_name].size)}; no model*.safetensors")
              for i in adapters[-3:]]
        if args:
            ev.append(ev_at(f, "args.json", f'"{flag}": "{args.get(flag)}", "load_args": '
                                          f'{str(args.get("load_args")).lower()}, "model": "{model}"'))
        return self.make(message=msg, fix=fix, evidence=ev, severity=severity, count=len(adapters))


# ------------------------------------------------------------------------------------------ GD805
class FullNotAdapter(CkptRule):
    """--expect lora (or a LoRA command) but the checkpoint holds full weights."""

    def finish(self, ctx: RunState) -> list[Finding]:
        out = []
        for group in newest_per_run(self.inputs):
            fulls = [i for i in group if kind(i.facts) == "full"]
            if not fulls:
                continue
            want, why_want = intent(fulls[-1], ctx.run if ctx.run.cli or ctx.run.args else None)
            if want != "lora":
                continue
            f = fulls[-1].facts
            p = parts(f)
            args = f.args if isinstance(f.args, dict) else {}
            flag = "train_type" if ("train_type" in args and "tuner_type" not in args) else "tuner_type"
            msg = (f"A LoRA adapter was expected ({why_want}), but {f.name} holds full model weights: "
                   f"{', '.join(f.weight_files())} {fmt_bytes(p.weights)}"
                   + (f" ({fmt_params(p.params)} params)" if p.params else "")
                   + (f"; args.json records {flag}={args.get(flag)}" if args.get(flag) else "") + ".")
            fix = [f"Train with --{flag} lora (the adapter of a 7B model is tens of MB, not GBs).",
                   "If full weights are what you want, run check-ckpt with --expect full."]
            ev = [ev_at(f, n, f"{n} {fmt_bytes(f.files[n].size)}") for n in f.weight_files()[:3]]
            out.append(self.make(message=msg, fix=fix, evidence=ev, count=len(fulls)))
        return out
