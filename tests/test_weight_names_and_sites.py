"""The reading of a weight name vLLM's loader refused (doctor/classify/weight_names.py), which loading part the
evidence shows (doctor/classify/parts.py): one reading the name supports, never a list of every usual cause; and where
the raise sites of a frameless exception's wording place it (doctor/classify/structure.py)."""
from pathlib import Path

import pytest

from doctor.classify.parts import part_of
from doctor.classify.weight_names import reading
from doctor.signals import Frame

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("key, kind", [
    ("'lm_head.weight'", "tied-head"),
    ("'Im_head.weight'", "tied-head"),                       # OCR of a screenshot reads l as I
    ("'model.layers.0.mlp.gate_gate_up_proj.weight'", "packed-twice"),
    ("'layers.0.mlp.gate_gate_up_proj.deq_scale'", "packed-twice"),
    ("'model.layers.3.self_attn.qkqkv_proj.weight'", "packed-twice"),   # 'qkv_proj'.replace('v_proj', 'qkv_proj')
    ("'layers.35.mlp.gate.g_idx'", "router-quantised"),
    ("'model.layers.2.self_attn.q_proj.qweight'", "quantised-layer"),
    ("'model.layers.2.mlp.down_proj.weight_scale'", "quantised-layer"),
    ("'score.weight'", "head"),
    ("'v_head.summary.weight'", None),                       # a head's inner layer: not the head's own tensor
    ("'model.layers.0.mlp.gate_proj.weight'", None),          # an ordinary name: nothing specific to say
    ("'model.embed_tokens.weight'", None),
    ("'text'", None),
])
def test_the_name_gives_one_reading(key, kind):
    got = reading(key)
    assert (got.kind if got else None) == kind


def test_the_router_reading_names_the_tensor_and_the_gate():
    got = reading("'layers.35.mlp.gate.g_idx'")
    assert "`g_idx`" in got.why and "`mlp.gate`" in got.why and "full precision" in got.fix


def test_the_loading_part_follows_the_evidence():
    site = "/usr/lib/python3/site-packages/"
    load = (Frame(site + "vllm/model_executor/models/qwen3_moe.py", 574, "load_weights"),)
    assert part_of(load, "").id == "vllm-weight-names"     # neither a sync nor a checkpoint loader is shown
    assert part_of(load, "Loading safetensors checkpoint shards:   0% Completed").id == "vllm-checkpoint-load"
    old = (Frame(site + "vllm/model_executor/model_loader.py", 99, "get_model"),) + load   # vLLM <= 0.3's loader
    assert part_of(old, "").id == "vllm-checkpoint-load"
    synced = (Frame(site + "trl/trainer/grpo_trainer.py", 900, "_move_model_to_vllm"),) + load
    assert part_of(synced, "").id == "vllm-weight-load"


def _analyze(case: str) -> dict:
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "doctor", "analyze", str(case), "--format", "json", "--isolated"],
                         capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout)


def test_a_named_head_replaces_the_list_of_usual_causes_in_the_report():
    """A GPTQ MoE checkpoint whose router got g_idx (dev16 1919): the report states the router reading and no
    longer lists a tied head and heads of reward models as candidates, nor tells to sync weights one at a time."""
    case = next((FIXTURES / "devlogs16").glob("1919-*"))
    first = _analyze(case)["findings"][0]
    assert first["category"] == "vllm-engine-error"
    assert "MoE router" in first["message"]
    assert "tied lm_head" not in first["message"] and "Usual causes" not in first["message"]
    assert first["fix"][0].startswith("Use a quantised checkpoint that keeps the MoE router")
    assert not any("one named parameter at a time" in f for f in first["fix"])


def test_a_frameless_exception_is_placed_where_every_raise_site_agrees():
    """vLLM raises 'Sleep mode can only be used for one instance per process.' in two functions of its workers (dev20
    2519): each site gives the vLLM engine entry, so the verdict is that entry; one site alike when the templates
    differ in their literal text (dev18 2230: _merge_multimodal_embeddings over the looser omni copy)."""
    from doctor.classify.structure import first_failure, site_candidates, site_frames
    from doctor.signals import ExceptionInfo, Where

    def exc(t, m):
        return ExceptionInfo(t, m, (), Where("x.log", 1), None, 1, f"{t}: {m}")
    sleep = exc("AssertionError", "Sleep mode can only be used for one instance per process.")
    assert site_frames(sleep) == () and len({f.func for f in site_candidates(sleep)}) == 2
    v = first_failure([sleep], [])
    assert v is not None and v.entry.category == "vllm-engine-error"
    mm = exc("ValueError", "Attempted to assign 308 + 104 = 412 multimodal tokens to 1159 placeholders")
    assert [f.func for f in site_frames(mm)] == ["_merge_multimodal_embeddings"]


def test_an_environment_named_for_a_library_does_not_put_a_frame_inside_it():
    """dev21 2601: a conda environment named `vllm`; the stack runs through transformers' Trainer, not vLLM."""
    from doctor.classify.structure import classify
    env = "/home/u/miniconda3/envs/vllm/lib/python3.12/site-packages/"
    frames = (Frame(env + "transformers/trainer.py", 2241, "_inner_training_loop"),)
    v = classify(None, frames)
    assert v is None or v.entry.category != "vllm-engine-error"
    inside = (Frame(env + "vllm/v1/engine/core.py", 100, "run_engine_core"),)
    assert classify(None, inside).entry.category == "vllm-engine-error"
