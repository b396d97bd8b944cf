"""LLaMA-Factory's argument table: the AST reader of tools/build_llamafactory_args.py (on a source written here and
on two real cached release wheels), the shipped table and its reader doctor/swift/llamafactory_args.py."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from doctor.swift import llamafactory_args as lfa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_llamafactory_args as bla  # noqa: E402

SOURCE = textwrap.dedent('''
    from dataclasses import dataclass, field
    from typing import ClassVar, Optional
    from transformers import Seq2SeqTrainingArguments

    @dataclass
    class LoraArguments:
        lora_rank: int = field(default=8, metadata={"help": "The intrinsic dimension for LoRA fine-tuning."})

    @dataclass
    class FinetuningArguments(LoraArguments):
        stage: str = field(default="sft", metadata={"help": "Which stage will be performed in training."})
        compute_dtype: Optional[str] = field(default=None, init=False, metadata={"help": "Do not specify it."})
        KINDS: ClassVar[tuple] = ("lora",)
        plain: bool = False

    @dataclass
    class TrainingArguments(Seq2SeqTrainingArguments):
        ray_num_workers: int = field(default=1, metadata={"help": "workers"})

    class Unused:
        other: int = 1
''')


def test_ast_reader_follows_package_bases_and_skips_what_the_parser_skips():
    got = bla.class_fields({"finetuning_args": SOURCE}, ["FinetuningArguments", "TrainingArguments"])
    assert set(got) == {"lora_rank", "stage", "plain", "ray_num_workers"}   # no init=False, ClassVar, Unused
    assert got["lora_rank"] == ("FinetuningArguments", "The intrinsic dimension for LoRA fine-tuning.")
    assert got["ray_num_workers"][0] == "TrainingArguments"   # transformers' base not followed (not in sources)
    init = "from .data_args import DataArguments\nfrom .parser import get_train_args\nfrom .x import (A, B)\n"
    assert bla.roots_of(init, {"data_args", "parser", "x"}) == ["DataArguments", "A", "B"]
    assert bla.spans([True, True, False, True]) == [0, 1, 3, 3]


def _wheel(pkg: str, ver: str) -> Path:
    found = sorted((bla.CACHE / pkg / ver).glob("*.whl"))
    if not found:
        pytest.skip(f"no cached {pkg} {ver} wheel under {bla.CACHE}")
    return found[0]


def test_builder_reads_the_rename_of_checkpoint_dir_from_two_real_wheels():
    old, new = bla.read_wheel(_wheel("llmtuner", "0.3.3")), bla.read_wheel(_wheel("llmtuner", "0.4.0"))
    assert "checkpoint_dir" in old and "adapter_name_or_path" not in old
    assert "adapter_name_or_path" in new and "checkpoint_dir" not in new
    assert old["checkpoint_dir"][0] == "ModelArguments"
    assert "output_dir" not in new          # transformers' own field: not LLaMA-Factory's
    lf = bla.read_wheel(_wheel("llamafactory", "0.9.2"))
    assert lf["ray_num_workers"][0] == "TrainingArguments" and "media_dir" in lf and "image_dir" not in lf


def test_shipped_table_is_what_the_builder_writes():
    if not (bla.CACHE / "llamafactory").is_dir():
        pytest.skip("no cached LLaMA-Factory wheels")
    table, _ = bla.build()
    assert bla.dump(table) == lfa.DATA.read_text(encoding="utf-8")


def test_shipped_table_is_small_and_consistent():
    assert lfa.DATA.stat().st_size < 20_000
    t = json.loads(lfa.DATA.read_text(encoding="utf-8"))
    assert t["releases"][0] == "0.1.8" and t["releases"][-1] == "0.9.5"
    for old, (new, rel, why) in t["renamed"].items():
        assert lfa.version_key(rel) and rel in why   # each rename names its release
        assert lfa.declared(old) is False
        assert lfa.declared(new) or lfa.is_transformers(new), (old, new)
    assert not set(t["args"]) & set(t["transformers"]) - {"overwrite_output_dir", "seed", "use_cache"}


def test_reader_answers_by_release():
    assert lfa.declared("checkpoint_dir", "0.3.3") is True
    assert lfa.declared("checkpoint_dir", "0.3.9") is True         # before the rename's release (0.4.0)
    assert lfa.declared("checkpoint_dir", "0.4.0") is False
    assert lfa.declared("adapter_name_or_path", "0.3.3") is False
    assert lfa.declared("adapter_name_or_path", "0.9.1.dev0") is True
    assert lfa.declared("split", "0.9.1.dev0") is False and lfa.declared("split", "0.8.2") is True
    assert lfa.declared("cutoff_len", "0.1.8") is False
    assert lfa.declared("no_such_argument") is False
    assert lfa.renamed("max_source_length")[:2] == ("cutoff_len", "0.2.0")
    assert lfa.renamed_to("adapter_name_or_path")[:2] == ("checkpoint_dir", "0.4.0")
    assert lfa.removed("split")[1:3] == ("0.8.3", True)
    assert lfa.removed("lora_rank") is None and lfa.removed("checkpoint_dir") is None   # declared / renamed
    assert lfa.closest("lora_rnak") == ["lora_rank"]
    assert lfa.only("task") == "eval" and lfa.is_transformers("do_predict")
    assert lfa.label("0.5.3") == "llmtuner 0.5.3" and lfa.label("0.9.1") == "LLaMA-Factory 0.9.1"
    assert lfa.version_key("v0.9.1.dev0") == (0, 9, 1) and lfa.version_key(None) is None
