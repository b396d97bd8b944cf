"""Build doctor/data/llamafactory_args.json: which LLaMA-Factory release declares which argument.

Reads the release wheels cached by raise_index_fetch.py (~/.cache/grpo-doctor-raise-index or
$GRPO_DOCTOR_RAISE_CACHE: llmtuner/<ver>/*.whl for the releases published as ``llmtuner``, llamafactory/<ver>/*.whl
for those published as ``llamafactory``), WITHOUT importing or executing anything: the argument dataclasses of each
release (<pkg>/hparams/*.py: ModelArguments, DataArguments, FinetuningArguments, GeneratingArguments,
EvaluationArguments, the GeneralArguments of 0.1.x and, from 0.9.2, the RayArguments... of hparams/training_args.py)
are parsed with ``ast``: a root class is one that hparams/__init__.py imports from a module of hparams, its fields are
the annotated assignments of its body and of its base classes defined in hparams (the mixins: LoraArguments,
RLHFArguments, QuantizationArguments...), a base class from elsewhere (transformers' Seq2SeqTrainingArguments) is not
followed: transformers' own fields are not LLaMA-Factory's (doctor/data holds no copy of them; GD401 asks the
installed transformers). A field with ``init=False`` is left out: HfArgumentParser makes no option of it.

The table keeps, per argument, the releases that declare it as spans of indices into ``releases`` (one span
[first, last] in the usual case; an argument that left and came back has two), plus RENAMED below: an argument that
disappears in a release while another of the same purpose appears, each read from both releases' source (the tag and
the commit that renamed it in ``why``).

    python tools/build_llamafactory_args.py              # rebuild the table
    python tools/build_llamafactory_args.py --candidates # the arguments that vanish and appear between releases
"""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "doctor" / "data" / "llamafactory_args.json"
CACHE = Path(os.environ.get("GRPO_DOCTOR_RAISE_CACHE", Path.home() / ".cache" / "grpo-doctor-raise-index"))

# old name -> (new name, the first release (tag) without the old name, why). Each one read in both releases'
# hparams (the cached wheels: the old field's help text beside the new one's) and pinned to the tag and commit of
# github.com/hiyouga/LLaMA-Factory (git log -S'<old>:' -- src/*/hparams; git tag --contains <commit>).
_CUT = "0.2.0 (commit dc68c313e, 2023-09-21) replaced max_source_length and max_target_length with cutoff_len, the " \
       "length of prompt and answer together: set it to their sum"
_ADAPTER = "0.4.0 (commit f902b0d42 'refactor adapter hparam', 2023-12-15) renamed the *_checkpoint paths of LoRA " \
           "weights to *_adapters / adapter_name_or_path"
_PREF = "0.8.0 (commit b0d996666 'support SimPO', 2024-05-26) renamed the dpo_* / orpo_* loss arguments to pref_*"
_FREEZE = "0.7.1 (commit 538c79fd8, 2024-05-16) renamed the freeze-tuning arguments to freeze_*"
_PIXELS = "0.9.2 (commits c09b64893, f5cd17881, 2025-02-18) replaced the *_resolution limits with *_max_pixels " \
          "(and *_min_pixels), a number of pixels as before"
RENAMED: dict[str, tuple[str, str, str]] = {
    "max_source_length": ("cutoff_len", "0.2.0", _CUT),
    "max_target_length": ("cutoff_len", "0.2.0", _CUT),
    "hf_auth_token": ("hf_hub_token", "0.2.1", "0.2.1 (commit 2eb65d21a, 2023-11-07) renamed hf_auth_token to "
                                                "hf_hub_token (same help text)"),
    "dpo_ref_model": ("ref_model", "0.3.0", "0.3.0 (commit 7a3a0144a 'support full-parameter PPO', 2023-11-16) "
                                            "renamed dpo_ref_model to ref_model"),
    "dpo_ref_model_checkpoint": ("ref_model_adapters", "0.3.0", "0.3.0 (commit 7a3a0144a) renamed it "
                                 "ref_model_checkpoint, which 0.4.0 (commit f902b0d42) renamed ref_model_adapters"),
    "checkpoint_dir": ("adapter_name_or_path", "0.4.0", _ADAPTER),
    "ref_model_checkpoint": ("ref_model_adapters", "0.4.0", _ADAPTER),
    "reward_model_checkpoint": ("reward_model_adapters", "0.4.0", _ADAPTER),
    "neft_alpha": ("neftune_noise_alpha", "0.4.0", "0.4.0 (commit 9e2cc21d0, 2023-12-12) dropped its own neft_alpha "
                                                   "for transformers' TrainingArguments.neftune_noise_alpha"),
    "sft_packing": ("packing", "0.6.0", "0.6.0 (commit 4881f4e63 'allow non-packing pretraining', 2024-03-09) "
                                        "renamed sft_packing to packing (all stages)"),
    "lora_bf16_mode": ("pure_bf16", "0.6.0", "0.6.0 (commit e416cecf6, 2024-03-08) replaced lora_bf16_mode with "
                                             "pure_bf16 (the whole model in bf16, without AMP)"),
    "ppo_logger": ("report_to", "0.6.1", "0.6.1 (commit 9408366a3, 2024-03-28) dropped ppo_logger: PPO logs to "
                                         "transformers' report_to (wandb or tensorboard)"),
    "cache_path": ("tokenized_path", "0.6.2", "0.6.2 (commit b12176d81, 2024-04-02) renamed cache_path to "
                                              "tokenized_path"),
    "badam_switch_block_every": ("badam_switch_interval", "0.7.1", "0.7.1 (commit dd0b85580 'fix badam configs', "
                                                                   "2024-05-02) renamed it badam_switch_interval"),
    "name_module_trainable": ("freeze_trainable_modules", "0.7.1", _FREEZE),
    "num_layer_trainable": ("freeze_trainable_layers", "0.7.1", _FREEZE),
    "dpo_beta": ("pref_beta", "0.8.0", _PREF),
    "dpo_ftx": ("pref_ftx", "0.8.0", _PREF),
    "dpo_loss": ("pref_loss", "0.8.0", _PREF),
    "orpo_beta": ("pref_beta", "0.8.0", _PREF + " (ORPO is pref_loss: orpo)"),
    "image_dir": ("media_dir", "0.9.2", "0.9.2 (commit 8f401e37f 'support audio', 2025-02-05) renamed image_dir to "
                                        "media_dir"),
    "image_resolution": ("image_max_pixels", "0.9.2", _PIXELS),
    "video_resolution": ("video_max_pixels", "0.9.2", _PIXELS),
    "train_mm_proj_only": ("freeze_language_model", "0.9.2", "0.9.2 (commit 71a1c1321 'update args', 2025-03-10) "
                           "replaced train_mm_proj_only with freeze_language_model (freeze_vision_tower is on by "
                           "default)"),
    "new_special_tokens": ("add_special_tokens", "0.9.3", "0.9.3 (commit b07628dea, 2025-04-22) renamed "
                                                          "new_special_tokens to add_special_tokens"),
    "new_normal_tokens": ("add_tokens", "0.9.3", "0.9.3 (commit b07628dea, 2025-04-22) renamed new_normal_tokens "
                                                 "to add_tokens"),
    "use_cache": ("use_kv_cache", "0.9.4", "0.9.4 (commit d9d67ba62, 2025-10-17) renamed use_cache to use_kv_cache"),
}
# arguments that went without a one-to-one successor: old name -> (the first release without it, what replaced it;
# tag and commit)
REMOVED: dict[str, tuple[str, str]] = {
    "use_auth_token": ("0.2.1", "0.2.1 (commit 2eb65d21a) removed it: a `huggingface-cli login` token is used as "
                                "it is, or give the token with hf_hub_token"),
    "resume_lora_training": ("0.4.0", "0.4.0 (commit f902b0d42) removed it; create_new_adapter has the opposite "
                                      "sense (resume_lora_training false = create_new_adapter true)"),
    "system_prompt": ("0.4.0", "0.4.0 (commit 934d00ea1 'support system column') removed it: the system prompt "
                               "comes from the dataset's system column or the template (default_system from 0.8.0)"),
    "disable_version_checking": ("0.6.0", "0.6.0 (commit 73d9dfc7a) removed it: set the environment variable "
                                          "DISABLE_VERSION_CHECK=1 instead"),
    "split": ("0.8.3", "0.8.3 (commit 0ea708c22 'change the task name format, delete split param') removed it: an "
                       "evaluation task names its split (task: mmlu_test)"),
    "visual_inputs": ("0.9.0", "0.9.0 (commit 2f6fc27c8 'remove visual_inputs') removed it: a multimodal model is "
                               "recognised from its template"),
}
# transformers releases whose Seq2SeqTrainingArguments fields LLaMA-Factory's train command also takes (its
# TrainingArguments subclass): their union is kept as one list, read the same way from the cached wheels
TRANSFORMERS = ("4.45.2", "4.57.6", "5.24.0")


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def releases(cache: Path = CACHE) -> list[tuple[str, str, Path]]:
    """(package, version, wheel) of every cached release in order; a version published under both names (0.7.1) is
    read from the ``llamafactory`` wheel."""
    found: dict[str, tuple[str, str, Path]] = {}
    for pkg in ("llmtuner", "llamafactory"):   # llamafactory's wheel wins for a version published under both names
        for wheel in sorted((cache / pkg).glob("*/*.whl")):
            ver = wheel.parent.name
            found[ver] = (pkg, ver, wheel)
    return [found[v] for v in sorted(found, key=_version_key)]


def _call_kw(call: ast.expr | None, name: str) -> ast.expr | None:
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
    return None


def _help(value: ast.expr | None) -> str:
    meta = _call_kw(value, "metadata")
    if isinstance(meta, ast.Dict):
        for k, v in zip(meta.keys, meta.values):
            if isinstance(k, ast.Constant) and k.value == "help":
                try:
                    return str(ast.literal_eval(v))
                except ValueError:
                    return ast.unparse(v)
    return ""


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def class_fields(sources: dict[str, str], roots: list[str] | None = None) -> dict[str, tuple[str, str]]:
    """The dataclass fields of ``roots`` (every class of ``sources`` when None), base classes defined in ``sources``
    followed: name -> (root class, help text). ``sources``: module name -> source text; nothing is executed.
    A field declared ``init=False`` or ``ClassVar`` is no option of HfArgumentParser and is left out."""
    classes: dict[str, ast.ClassDef] = {}
    for text in sources.values():
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
    out: dict[str, tuple[str, str]] = {}

    def walk(cls: ast.ClassDef, root: str, seen: set[str]) -> None:
        if cls.name in seen:
            return
        seen.add(cls.name)
        for base in cls.bases:   # bases first: a subclass's own declaration of a name wins (its help text)
            b = classes.get(_base_name(base))
            if b is not None:
                walk(b, root, seen)
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            init = _call_kw(stmt.value, "init")
            if isinstance(init, ast.Constant) and init.value is False:
                continue
            out[stmt.target.id] = (root, _help(stmt.value))

    for name in roots if roots is not None else list(classes):
        if name in classes:
            walk(classes[name], name, set())
    return out


_IMPORT = re.compile(r"^from \.(\w+) import ([\w, ()]+)", re.M)


def roots_of(init_source: str, modules: set[str]) -> list[str]:
    """The classes hparams/__init__.py imports from its own modules (the argument dataclasses it exports)."""
    names: list[str] = []
    for mod, what in _IMPORT.findall(init_source):
        if mod in modules:
            names += [n for n in re.findall(r"\w+", what) if n[:1].isupper()]
    return names


def read_wheel(wheel: Path) -> dict[str, tuple[str, str]]:
    """name -> (root class, help) of one release wheel's hparams."""
    with zipfile.ZipFile(wheel) as zf:
        hp = [n for n in zf.namelist() if re.fullmatch(r"(?:llmtuner|llamafactory)/hparams/\w+\.py", n)]
        sources = {Path(n).stem: zf.read(n).decode("utf-8") for n in hp}
    init = sources.pop("__init__", "")
    sources.pop("parser", None)
    return class_fields(sources, roots_of(init, set(sources)))


def transformers_fields(cache: Path = CACHE) -> list[str]:
    """The union of Seq2SeqTrainingArguments' fields over the TRANSFORMERS wheels cached (none: an empty list)."""
    names: set[str] = set()
    for ver in TRANSFORMERS:
        for wheel in sorted((cache / "transformers" / ver).glob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                sources = {Path(n).stem: zf.read(n).decode("utf-8") for n in zf.namelist()
                           if n in ("transformers/training_args.py", "transformers/training_args_seq2seq.py")}
            names |= set(class_fields(sources, ["Seq2SeqTrainingArguments"]))
    return sorted(names)


def spans(present: list[bool]) -> list[int]:
    """[first, last, first, last, ...] of the runs of True."""
    out: list[int] = []
    for i, p in enumerate(present):
        if p and (i == 0 or not present[i - 1]):
            out.append(i)
        if p and (i == len(present) - 1 or not present[i + 1]):
            out.append(i)
    return out


def build(cache: Path = CACHE) -> tuple[dict, dict[str, dict[str, tuple[str, str]]]]:
    rels = releases(cache)
    per = {ver: read_wheel(wheel) for _, ver, wheel in rels}
    names = sorted({n for fields in per.values() for n in fields})
    table = {
        "releases": [ver for _, ver, _ in rels],
        "llmtuner": [ver for pkg, ver, _ in rels if pkg == "llmtuner"],
        "args": {n: spans([n in per[ver] for _, ver, _ in rels]) for n in names},
        # the arguments that only one command parses: EvaluationArguments (llamafactory-cli eval) and LLaMA-Factory's
        # own TrainingArguments fields (train, 0.9.2+); the other classes are shared by train, chat, export and eval
        "only": {cmd: sorted(n for n in names if {f[n][0] for f in per.values() if n in f} == {cls})
                 for cmd, cls in (("eval", "EvaluationArguments"), ("train", "TrainingArguments"))},
        "renamed": {old: list(v) for old, v in sorted(RENAMED.items())},
        "removed": {name: list(v) for name, v in sorted(REMOVED.items())},
        "transformers": transformers_fields(cache),
    }
    return table, per


def candidates(per: dict[str, dict[str, tuple[str, str]]]) -> None:
    """Print, between consecutive releases, each argument that vanishes and the new ones closest in help text."""
    vers = list(per)
    for a, b in zip(vers, vers[1:]):
        gone = sorted(set(per[a]) - set(per[b]))
        new = sorted(set(per[b]) - set(per[a]))
        if not gone:
            continue
        print(f"== {a} -> {b}: {len(gone)} gone, {len(new)} new")
        for g in gone:
            ranked = sorted(new, key=lambda n: -difflib.SequenceMatcher(None, per[a][g][1], per[b][n][1]).ratio())
            best = [(n, round(difflib.SequenceMatcher(None, per[a][g][1], per[b][n][1]).ratio(), 2)) for n in ranked[:2]]
            print(f"  {g} [{per[a][g][0]}] {per[a][g][1][:70]!r} -> {best}")


def dump(table: dict) -> str:
    return json.dumps(table, separators=(",", ":"), sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candidates", action="store_true", help="print rename candidates instead of writing the table")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    table, per = build()
    if not per:
        print(f"no cached wheels under {CACHE}", file=sys.stderr)
        return 1
    if a.candidates:
        candidates(per)
        return 0
    a.out.write_text(dump(table), encoding="utf-8")
    print(f"{a.out}: {len(table['releases'])} releases, {len(table['args'])} arguments, "
          f"{len(table['renamed'])} renames, {a.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
