"""Short fuzz run (part of the normal suite, well under a minute): the properties of props.py over generated and
mutated inputs. The long run is tools/fuzz_long.py; what it finds is saved under fixtures/fuzz/ and replayed here."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import props
import strategies as hs

N = int(os.environ.get("GRPO_DOCTOR_FUZZ_EXAMPLES", "25"))
SHORT = settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
FOUND = sorted((props.ROOT / "fixtures" / "fuzz").glob("*.log"))


@SHORT
@given(hs.hostile_log())
def test_generated_logs(data):
    props.check_log_bytes(data)


@SHORT
@given(hs.mutated_real_log())
def test_mutated_real_logs(data):
    props.check_log_bytes(data)


@SHORT
@given(hs.run_dir_files())
def test_run_dirs(files):
    props.check_run_dir(files)


@SHORT
@given(st.binary(max_size=600), st.one_of(st.none(), st.integers(0, 1 << 64)), st.binary(max_size=64))
def test_safetensors_headers(header, declared, tail):
    props.check_safetensors(header, declared, tail)


@SHORT
@given(st.lists(hs.WORDS, min_size=6, max_size=6))
def test_renderers_on_arbitrary_strings(strings):
    props.check_strings(strings)


@SHORT
@given(st.lists(hs.VALUES | hs.WORDS, max_size=12))
def test_argv_parser(tokens):
    from doctor.sources.argv import parse_argv, parse_value
    from doctor.sources.swiftconfig import RunConfig
    parse_argv(["--" + t if i % 2 == 0 else t for i, t in enumerate(tokens)])
    for t in tokens:
        parse_value(t)
    run = RunConfig()
    run.add_command("swift rlhf " + " ".join(tokens))
    run.summary()


@pytest.mark.parametrize("path", FOUND, ids=[p.name for p in FOUND])
def test_regressions_found_by_the_long_run(path):
    props.check_log_bytes(path.read_bytes(), name=path.name)


@SHORT
@given(hs.config_text())
def test_config_files(case):
    props.check_config(*case)


@SHORT
@given(hs.checkpoint_files())
def test_checkpoint_side_files(files):
    props.check_checkpoint_files(files)
