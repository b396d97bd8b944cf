"""Checkpoint facts: safetensors headers (the library's parser and our bounds checks agree on what is broken),
torch zip completeness, parameter counts from config.json, grouping of paths."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from ckpt_util import TINY_CONFIG, full_checkpoint, lora_checkpoint, tiny_tensors, torch_like_zip
from safetensors.numpy import save_file

from doctor.ckpt import group_paths
from doctor.sources.checkpoint import expected_params, find_checkpoints, read_checkpoint
from doctor.sources.inputs import InputError
from doctor.sources.safetensors_header import read_header


def _st(tmp_path: Path, name: str = "m.safetensors") -> Path:
    p = tmp_path / name
    save_file({"a": np.zeros((4, 4), dtype=np.float16), "b": np.zeros((3,), dtype=np.float32)}, str(p))
    return p


def _facts(p: Path):
    return read_header(str(p), p.stat().st_size)


def test_valid_file_from_the_library_writer(tmp_path):
    h = _facts(_st(tmp_path))
    assert h.ok and h.lib_error is None and h.problems == []
    assert {t.name: (t.dtype, t.shape) for t in h.tensors} == {"a": ("F16", (4, 4)), "b": ("F32", (3,))}
    assert h.numel == 19 and h.data_bytes == 4 * 4 * 2 + 3 * 4


def test_truncated_file_says_how_many_bytes_are_missing(tmp_path):
    p = _st(tmp_path)
    os.truncate(p, p.stat().st_size - 5)
    h = _facts(p)
    assert h.lib_error and "SafetensorError" in h.lib_error
    assert len(h.problems) == 1 and "5 bytes missing" in h.problems[0] and "truncated" in h.problems[0]


def test_header_length_past_the_end(tmp_path):
    p = _st(tmp_path)
    size = p.stat().st_size
    with open(p, "r+b") as f:
        f.write(struct.pack("<Q", 10 * size))
    h = _facts(p)
    assert h.lib_error is not None
    assert "past the end of the file" in h.problems[0] and f"{10 * size:,}" in h.problems[0]


def test_header_not_json(tmp_path):
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", 8) + b"{notjson" + b"\0" * 8)
    h = _facts(p)
    assert h.lib_error is not None and "not valid JSON" in h.problems[0]


def test_extra_bytes_after_last_tensor(tmp_path):
    p = _st(tmp_path)
    with open(p, "ab") as f:
        f.write(b"\0" * 16)
    h = _facts(p)
    assert h.lib_error is not None  # loaders reject it too
    assert h.problems == ["16 bytes follow the last tensor: the file is longer than its header says (a partial "
                          "overwrite or an appended file)"]


def test_span_not_matching_dtype_and_shape(tmp_path):
    hdr = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    p = tmp_path / "s.safetensors"
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 8)
    h = _facts(p)
    assert h.lib_error is not None
    assert any("needs 16 bytes but its data_offsets span 8" in x for x in h.problems)


def test_zero_byte_and_lfs_pointer(tmp_path):
    z = tmp_path / "z.safetensors"
    z.write_bytes(b"")
    h = _facts(z)
    assert not h.ok and h.problems == ["the file is empty (0 bytes)"] and h.lib_error
    lfs = tmp_path / "l.safetensors"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 208632\n")
    h = _facts(lfs)
    assert h.lfs == {"oid": "sha256:" + "ab" * 32, "size": "208632"} and not h.ok


def test_sparse_5gb_file_is_read_from_its_header_only(tmp_path):
    """A 5.4 GB file of holes: if the data were read this would take seconds and disk bandwidth."""
    hdr = {f"l{i}": {"dtype": "BF16", "shape": [8192, 8192], "data_offsets": [i * 2 * 8192 ** 2, (i + 1) * 2 * 8192 ** 2]}
           for i in range(40)}
    raw = json.dumps(hdr).encode()
    p = tmp_path / "big.safetensors"
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + 40 * 2 * 8192 ** 2)
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF)
    h = _facts(p)
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert h.ok and h.numel == 40 * 8192 ** 2
    # safe_open maps the whole file; touching the data would fault in ~1.3 million pages of it
    assert after.ru_minflt - before.ru_minflt + after.ru_majflt - before.ru_majflt < 10_000
    assert os.stat(p).st_blocks * 512 < 1_000_000  # still sparse afterwards: nothing was written or filled


def test_expected_params_by_hand():
    # tiny Qwen2 (real-swift-cpu.md: "102,976 parameters"): embed 448*64 = 28,672 (tied); per layer q 64*64+64,
    # k 64*32+32, v 64*32+32, o 64*64, mlp 3*64*128, 2 norms 2*64 = 37,120; 2 layers 74,240; final norm 64
    assert expected_params(TINY_CONFIG) == 102_976
    assert sum(a.size for a in tiny_tensors().values()) == 102_976
    llama70 = {"model_type": "llama", "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
               "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
               "tie_word_embeddings": False}
    assert expected_params(llama70) == 70_553_706_496  # Llama-3-70B: "70.6B"
    assert expected_params({"model_type": "qwen2_moe"}) is None


def test_torch_zip_complete_or_cut(tmp_path):
    d = tmp_path / "checkpoint-3"
    full_checkpoint(d, optimizer_factor=0)
    torch_like_zip(d / "optimizer.pt")
    torch_like_zip(d / "rng_state.pth")
    size = (d / "rng_state.pth").stat().st_size
    os.truncate(d / "rng_state.pth", size - 30)
    f = read_checkpoint(d)
    assert f.files["optimizer.pt"].zip_ok is True
    assert f.files["rng_state.pth"].zip_ok is False
    assert f.files["model.safetensors"].zip_ok is None


def test_checkpoint_facts_and_run_dir(tmp_path):
    run = tmp_path / "v0-1"
    for s in (2, 4, 6):
        full_checkpoint(run / f"checkpoint-{s}")
    (run / "last-checkpoint").symlink_to("checkpoint-6")
    (run / "log.txt").write_text("run sh: `python swift/cli/rlhf.py --rlhf_type grpo --tuner_type full --model m`\n"
                                 "[INFO:swift] hello\n")
    (run / "checkpoint-6" / "global_step6").mkdir()
    (run / "checkpoint-6" / "global_step6" / "mp_rank_00_model_states.pt").write_bytes(b"x" * 10)
    (run / "checkpoint-6" / "latest").write_text("global_step6")
    f = read_checkpoint(run / "checkpoint-6")
    assert f.step == 6 and sorted(f.siblings) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    assert f.run_links == {"last-checkpoint": ("checkpoint-6", True)}
    assert f.command_source == "log.txt" and "--tuner_type full" in f.command_text
    assert f.deepspeed_tags == {"global_step6": 10} and f.latest == "global_step6"
    assert f.weight_files() == ["model.safetensors"] and f.adapter_files() == []
    assert f.fs_free is not None and f.fs_free > 0
    assert [p.name for p in find_checkpoints(tmp_path)] == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]


def test_group_paths_files_dirs_and_runs(tmp_path):
    run = tmp_path / "run"
    a = full_checkpoint(run / "checkpoint-2")
    b = lora_checkpoint(run / "checkpoint-4")
    (b / "global_step4").mkdir()
    (b / "global_step4" / "x_optim_states.pt").write_bytes(b"1")
    got = group_paths([str(a / "model.safetensors"), str(a / "config.json"), str(b / "global_step4" / "x_optim_states.pt"),
                       str(b)])
    assert [d for d, _ in got] == [a, b]
    assert [disp for _, disp in got] == [str(a), str(b)]
    assert [d.name for d, _ in group_paths([str(run)])] == ["checkpoint-2", "checkpoint-4"]
    with pytest.raises(InputError, match="no checkpoint here"):
        (tmp_path / "empty").mkdir()
        group_paths([str(tmp_path / "empty")])
    with pytest.raises(InputError, match="no such file"):
        group_paths([str(tmp_path / "nope")])


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=400), flips=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)),
                                                                    max_size=3))
def test_damaged_files_never_crash_and_never_false_alarm(tmp_path, cut, flips):
    """Any truncation or byte damage: no exception; when the library accepts the file we report no problem,
    and when it rejects a truncated file we say why."""
    p = tmp_path / "d.safetensors"
    save_file({"a": np.zeros((4, 4), dtype=np.float16), "b": np.zeros((3,), dtype=np.float32)}, str(p))
    raw = bytearray(p.read_bytes())
    for pos, val in flips:
        if pos < len(raw):
            raw[pos] = val
    raw = raw[:max(0, len(raw) - cut)] if cut else raw
    p.write_bytes(bytes(raw))
    h = _facts(p)
    if h.lib_error is None:
        assert h.problems == [] and h.lfs is None
    if cut and not flips:
        assert h.lib_error is not None and h.problems
