"""Issue 18 point 18: check-ckpt RUN_DIR measured every sibling checkpoint again for every checkpoint (N^2 directory
walks). Each checkpoint directory is now walked at most once per command; the sizes stay the same."""
from __future__ import annotations

import os
import re

import pytest

from doctor.ckpt import check_checkpoint_dirs, check_paths
from doctor.sources import checkpoint as ckpt_src

N = 12


def _run(tmp_path):
    run = tmp_path / "v0-run"
    for k in range(1, N + 1):
        c = run / f"checkpoint-{k * 10}"
        (c / f"global_step{k * 10}").mkdir(parents=True)
        (c / "adapter_config.json").write_text('{"r": 8, "peft_type": "LORA"}')
        (c / "trainer_state.json").write_text('{"global_step": %d}' % (k * 10))
        (c / f"global_step{k * 10}" / "mp_rank_00_model_states.pt").write_bytes(b"x" * (100 + k))
        (c / "latest").write_text(f"global_step{k * 10}")
    return run


@pytest.fixture
def walks(monkeypatch):
    """Every walk of a tree: the sources walk through safeio.walk (os.walk recursed: issue 30.9), imported by name."""
    from doctor.live import rundir
    from doctor.sources import inputs, safeio
    counted: list[str] = []
    real_walk = safeio.walk

    def counting_walk(top, *a, **kw):
        counted.append(os.fspath(top))
        return real_walk(top, *a, **kw)

    for module in (ckpt_src, inputs, rundir):
        monkeypatch.setattr(module, "walk", counting_walk)
    return counted


def _ckpt_walks(counted: list[str]) -> list[str]:
    return [t for t in counted if re.search(r"checkpoint-\d+$", t)]


def test_check_ckpt_run_dir_walks_each_checkpoint_at_most_once(tmp_path, walks):
    run = _run(tmp_path)
    check_paths([str(run)])
    per_dir = _ckpt_walks(walks)
    assert len(per_dir) <= N, len(per_dir)  # was N x (N - 1) = 132
    assert len(set(per_dir)) == len(per_dir)


def test_check_checkpoint_dirs_shares_the_sizes_too(tmp_path, walks):
    run = _run(tmp_path)
    check_checkpoint_dirs(sorted(run.iterdir()))
    assert len(_ckpt_walks(walks)) <= N


def test_sizes_are_what_a_fresh_walk_measures(tmp_path):
    run = _run(tmp_path)
    sizes: dict[str, int] = {}
    dirs = sorted(run.iterdir())
    for d in dirs:
        shared = ckpt_src.read_checkpoint(d, str(d), sizes=sizes).siblings
        alone = ckpt_src.read_checkpoint(d, str(d)).siblings
        assert shared == alone
        assert shared == {c.name: ckpt_src.dir_bytes(c) for c in dirs}
    # by hand: 3 small files + one .pt of 100 + k bytes
    k1 = run / "checkpoint-10"
    assert ckpt_src.dir_bytes(k1) == len('{"r": 8, "peft_type": "LORA"}') + len('{"global_step": 10}') + 101 + len(
        "global_step10")


def test_analyze_walks_the_run_directory_once(tmp_path, walks):
    """Issue 13: analyze found its inputs with one walk and the checkpoints with a second one over the same tree.
    The input walk now also collects the checkpoint-N/ folders, in check-ckpt's order (folder, then step)."""
    from doctor.analyze import analyze

    run = _run(tmp_path)
    (run / "logs").mkdir()
    (run / "logs" / "train.log").write_text("{'loss': 0.1, 'global_step/max_steps': '1/10'}\n")
    (run / "runs").mkdir()   # TensorBoard's folder: never holds checkpoints for us
    (run / "runs" / "checkpoint-999").mkdir()
    report = analyze([str(run)])   # `walks` counts every os.walk (one os module for all)
    roots = [t for t in walks if t == str(run)]
    assert roots == [str(run)], walks  # the run directory once (each checkpoint is measured by its own walk)
    kinds = [(i.path, i.kind) for i in report.inputs]
    ckpts = [p for p, k in kinds if k == "checkpoint"]
    # by hand: checkpoint-10 ... checkpoint-120 by step (not by name: checkpoint-100 after checkpoint-90)
    assert ckpts == [str(run / f"checkpoint-{k * 10}") for k in range(1, N + 1)]
    assert kinds[-1][1] == "checkpoint" and ("logs/train.log" in kinds[0][0])
