"""The installed releases a paste reports (doctor/sources/versions_said.py), in the forms issue templates and pip print."""
from __future__ import annotations

import io

import pytest

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader
from doctor.sources.versions_said import VersionsSaid


@pytest.mark.parametrize("line, said", [
    ("- `transformers` version: 4.52.0", ("transformers", "4.52.0")),         # transformers env
    ("- TRL version: 0.19.0+5206c92", ("trl", "0.19.0")),                     # trl env (a git build's suffix)
    ("- PyTorch version (GPU?): 2.6.0+cu124 (True)", ("torch", "2.6.0")),
    ("PyTorch version: 1.1.0", ("torch", "1.1.0")),                           # torch's collect_env
    ("- `llamafactory` version: 0.9.1.dev0", ("llamafactory", "0.9.1.dev0")),
    ("* DeepSpeed version: 0.16.4", ("deepspeed", "0.16.4")),
    ("trl version: 0.18.2", ("trl", "0.18.2")),
    ("vllm                      0.8.5.post1        pypi_0    pypi", ("vllm", "0.8.5.post1")),   # conda list
    ("flash_attn                2.7.4.post1", ("flash-attn", "2.7.4.post1")),                  # pip list
    ("ms_swift                                 3.4.0.dev0    /mnt/nas2", ("ms-swift", "3.4.0.dev0")),  # dev 2715
    ("swift版本：3.11.0.dev0", ("ms-swift", "3.11.0.dev0")),                    # ms-swift's template, dev 3117
    ("- swift version: 3.8.1", ("ms-swift", "3.8.1")),
    # a sentence, a requirement, a package not in the table: not a report of what is installed
    ("trl 0.14.0 broke my run", None),
    ("transformers version: >=4.52 is required", None),
    ("- CUDA version: 12.4", None),
    ("- Python version: 3.10.12", None),
])
def test_one_line_reports(line, said):
    assert VersionsSaid().read(line) == said


def test_pip_show_is_two_lines_and_its_version_line_alone_is_nothing():
    v = VersionsSaid()
    assert v.read("Name: trl") is None and v.read("Version: 0.17.0") == ("trl", "0.17.0")
    assert v.read("Version: 0.17.0") is None        # no Name line before it
    assert v.read("Name: numpy") is None and v.read("Summary: x") is None and v.read("Version: 1.0") is None


def test_an_environment_report_in_a_log_reaches_the_runs_versions_and_framework_version():
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()\n"
            "RuntimeError: something odd happened\n\n"
            "- `transformers` version: 4.52.0\n- TRL version: 0.19.1\n- PyTorch version (GPU?): 2.6.0+cu124 (True)\n")
    s = Session(load_catalog())
    for line in LineReader("t.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    s.finish()
    assert {k: s.run.versions[k] for k in ("transformers", "trl", "torch")} == \
        {"transformers": "4.52.0", "trl": "0.19.1", "torch": "2.6.0"}


def test_ms_swift_1_and_2_scripts_and_flags_name_the_framework():
    # dev 4009: `python3 llm_sft.py --sft_type lora --tuner_backend swift` (ms-swift 2.x examples/pytorch/llm)
    from doctor.swift.framework import detect
    assert detect([], ["python3 llm_sft.py \\\n    --sft_type lora --tuner_backend swift"], {})[0] == "ms-swift"
    assert detect([], ["swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B"], {})[0] == "ms-swift"
    # LLaMA-Factory's own flags are not ms-swift's
    assert detect([], ["llamafactory-cli train --stage sft --finetuning_type lora --template qwen"], {})[0] != "ms-swift"


def test_trls_own_value_head_and_ppov2_classes_name_trl():
    from doctor.swift.framework import detect
    # dev 2702, 2703: classes only trl defines
    assert detect([], ["AttributeError: 'AutoModelForCausalLMWithValueHead' object has no attribute 'base_model_prefix'"],
                  {})[0] == "trl"
    assert detect([], ["I use PPOv2Trainer with a reward function instead of a reward model"], {})[0] == "trl"
    assert detect([], ["AttributeError: 'MyValueHeadModel' object has no attribute 'x'"], {})[0] is None


def test_a_sentence_that_says_which_releases_ran_and_one_that_reports_an_outcome():
    # dev 4902, 2124, 3901
    assert VersionsSaid.used_in("使用 ms_swift 3.12.4 微调 Qwen3-VL-Reranker-2B") == [("ms-swift", "3.12.4")]
    assert VersionsSaid.used_in("I'm using torch==2.1.0 deepspeed==0.9.5 accelerate==0.30.0 transformers==4.39.2 with "
                                "flash-attn installed.") == [("torch", "2.1.0"), ("deepspeed", "0.9.5"),
                                                              ("accelerate", "0.30.0"), ("transformers", "4.39.2")]
    assert VersionsSaid.used_in("When I use transformers==4.28.1 + deepspeed==0.13.3 the code runs normally") == []
    assert VersionsSaid.used_in("try using trl 0.14.0 instead") == []
