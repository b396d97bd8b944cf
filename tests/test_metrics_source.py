"""Printed metric dicts in every shape real logs show."""
from __future__ import annotations

import math

from doctor.sources.metrics import is_step, is_summary, parse_console, parse_jsonl, step_number


def test_transformers4_numbers():
    v = parse_console("{'loss': 0.0, 'grad_norm': 0.95, 'reward': 0.89, 'kl': 8.5e-05, 'epoch': 0.0}")
    assert v == {"loss": 0.0, "grad_norm": 0.95, "reward": 0.89, "kl": 8.5e-05, "epoch": 0.0}


def test_transformers5_strings_and_nan():
    v = parse_console("{'loss': 'nan', 'grad_norm': '0.0001555', 'global_step/max_steps': '5/6'}")
    assert math.isnan(v["loss"]) and v["grad_norm"] == 0.0001555 and step_number(v) == 5


def test_missing_brace_and_cut_line():
    v = parse_console("'loss': -0.0, 'grad_norm': 0.0, 'learning_rate': 2.6e-07, 'reward': 0.34375, 'clip_ratio/low_me")
    assert v["loss"] == 0.0 and v["reward"] == 0.34375 and "clip_ratio/low_me" not in v


def test_not_metrics():
    assert parse_console("{'device_map': 'cpu', 'dtype': torch.float32}") is None
    assert parse_console("[INFO:swift] loss is fine") is None


def test_jsonl_nan_and_summary():
    v = parse_jsonl('{"loss": NaN, "grad_norm": Infinity, "reward": 0.5}')
    assert math.isnan(v["loss"]) and v["grad_norm"] == math.inf and is_step(v)
    s = parse_jsonl('{"last_model_checkpoint": "/x/checkpoint-6", "global_step": 6, "log_history": []}')
    assert is_summary(s) and not is_step(s)


# ------------------------------------------------------------------------------ the fast console reader
# read_console splits a whole transformers-5 dict instead of running _PAIR over it, and once a key sequence
# has been seen twice reads its lines with one pattern; both must give exactly what _PAIR + to_number give.
import re  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

from doctor.sources import metrics as M  # noqa: E402


def reference(text: str):
    """The reader before the fast paths: every _PAIR match, each value through to_number."""
    out = {}
    for key, q1, q2, bare in M._PAIR.findall(text):
        out[key] = M.to_number(q1 or q2 or bare)
    return out if len(M.TRAINER_KEYS.intersection(out)) >= 2 else None


def same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if list(a) != list(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if not ((math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))):
                return False
        elif x != y:
            return False
    return True


def non_finite(values) -> bool:
    return any(isinstance(v, float) and not math.isfinite(v) for v in values.values())


REAL = ("{'loss': '2e-08', 'grad_norm': '0.4358', 'learning_rate': '5e-05', 'reward': '0.75', 'reward_std': '0.9574', "
        "'rewards/Format/mean': '0.5', 'kl': '0', 'epoch': '0.09375', 'global_step/max_steps': '3/6', "
        "'elapsed_time': '10s', 'train_speed(s/it)': '3.272'}")


def test_transformers5_line_read_by_split_and_by_learned_layout():
    expected = {"loss": 2e-08, "grad_norm": 0.4358, "learning_rate": 5e-05, "reward": 0.75, "reward_std": 0.9574,
                "rewards/Format/mean": 0.5, "kl": 0.0, "epoch": 0.09375, "global_step/max_steps": "3/6",
                "elapsed_time": "10s", "train_speed(s/it)": 3.272}
    assert M._quoted_pairs(REAL) is not None           # the split path takes this line
    for _ in range(3):                                  # seen twice, the layout is learned and read with
        v, finite = M.read_console(REAL)
        assert v == expected and finite
    assert tuple(expected) in [keys for keys, _ in M._LAYOUTS]
    bad = REAL.replace("'loss': '2e-08'", "'loss': 'nan'").replace("'kl': '0'", "'kl': '1e999'")
    v, finite = M.read_console(bad)                     # same layout: the pattern reads it, the flag still trips
    assert math.isnan(v["loss"]) and v["kl"] == math.inf and not finite


def test_a_key_that_is_colon_space_takes_the_regex():
    # "{'loss': '1', ': ': '2', 'reward': '3'}": splitting would read "', ': '" as a separator
    text = "{'loss': '1', ': ': '2', 'reward': '3'}"
    assert M._quoted_pairs(text) is None
    assert M.read_console(text) == (reference(text), True)


def test_transformers4_and_cut_lines_are_not_split():
    assert M._quoted_pairs("{'loss': 0.0, 'grad_norm': 0.95}") is None
    assert M._quoted_pairs("{'loss': '0', 'grad_norm': '0.95', 'clip_ra") is None
    assert M._quoted_pairs("{'loss': '0', \"grad_norm\": '0.95'}") is None


def test_has_literal_is_any_literal():
    assert all(any(w in lit for w in M._LITERAL_WORDS) for lit in M.LITERALS)
    for text in ("{'loss': 1}", "x 'eval_loss' y", "loss: 1 reward: 2", "", "'train_runtime'", "grad_norm"):
        assert M.has_literal(text) == any(lit in text for lit in M.LITERALS), text


_TOKENS = st.sampled_from(["", "loss", "reward", "grad_norm", "kl", "0", "0.5", "-0", "nan", "NaN", "inf", "-inf",
                           "1e999", "4s", "3/6", ": ", ", ", ":", ",", " ", "'", '"', "{", "}", "x" * 119, "x" * 121])
_PIECE = st.lists(_TOKENS, max_size=3).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.one_of(_PIECE, st.sampled_from([": ", ", "])), _PIECE), min_size=1, max_size=6),
       st.booleans(), st.integers(1, 3))
def test_read_console_matches_the_regex_reader(pairs, trainer, repeat):
    if trainer:
        pairs = [("loss", "0.5"), ("reward", pairs[0][1])] + pairs
    text = "{" + ", ".join(f"'{k}': '{v}'" for k, v in pairs) + "}"
    for _ in range(repeat):   # repeats let the layout be learned and used
        values, finite = M.read_console(text)
        assert same(values, reference(text)), text
        assert M.parse_console(text) == values or (values is not None and non_finite(values))
        if values is not None:
            keys = [k for k, _, _, _ in M._PAIR.findall(text)]
            assert not (finite and non_finite(values))
            if len(set(keys)) == len(keys):   # a repeated key may hide its NaN: then finite is only False
                assert finite == (not non_finite(values))


def test_every_layout_pattern_only_takes_quote_free_values():
    for keys, pattern in M._LAYOUTS:
        line = "{" + ", ".join(f"'{k}': 'v'" for k in keys) + "}"
        assert pattern.fullmatch(line) and not pattern.fullmatch(line.replace("'v'", "'v\"'", 1))
        assert all(isinstance(k, str) and re.escape(k) for k in keys)
