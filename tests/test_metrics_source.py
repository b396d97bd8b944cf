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


from pathlib import Path  # noqa: E402

from doctor.analyze import analyze  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Megatron-LM's training_log line (megatron/training/training.py) and ms-swift's Megatron GRPO line (fixtures/devlogs3/
# 211, a real paste): values read by hand off the lines
MEGATRON_LM = (" [2024-06-01 10:00:00] iteration      100/   10000 | consumed samples:        12800 | elapsed time per "
               "iteration (ms): 1532.4 | learning rate: 2.999E-04 | global batch size:   128 | lm loss: 2.345678E+00 | "
               "loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:"
               "   0 |")


def test_megatron_iteration_lines_are_metric_rows():
    from doctor.sources.megatron_rows import read_megatron
    values, finite = read_megatron(MEGATRON_LM)
    assert finite and values == {"step": 100.0, "max_steps": 10000.0, "step_time": 1.5324, "learning_rate": 2.999e-4,
                                 "loss": 2.345678, "loss_scale": 65536.0, "grad_norm": 1.234,
                                 "skipped_iterations": 0.0, "nan_iterations": 0.0}
    case = next((ROOT / "fixtures" / "devlogs3").glob("211-*"))
    values, _ = read_megatron((case / "log.txt").read_text(encoding="utf-8"))
    assert (values["step"], values["loss"], values["reward_std"], values["rewards/Format/mean"]) == (7.0, -2.365559e-06,
                                                                                                    0.1261245, 0.0)
    assert values["step_time"] == 215.6130 and values["grad_norm"] == 0.016
    assert read_megatron("iteration 5/10 | loss: 1.0") == (None, True)  # not Megatron's line


def test_a_nan_megatron_loss_is_read_through_a_paste(tmp_path):
    rows = "".join(MEGATRON_LM.replace("iteration      100/", f"iteration      {100 + i}/")
                   .replace("lm loss: 2.345678E+00", "lm loss: nan" if i else "lm loss: 2.345678E+00") + "\n"
                   for i in range(3))
    (tmp_path / "log.txt").write_text(rows, encoding="utf-8")
    first = analyze([str(tmp_path)]).findings[0]
    assert (first.rule_id, first.category) == ("GD620", "loss-nan-or-inf")
