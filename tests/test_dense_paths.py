"""Issue 19, DENSE: the per-row short cuts give exactly what the plain code gives."""
from __future__ import annotations

import math
import random

import pytest

from doctor.checks.numerics import kl_spike
from doctor.sources import metrics


def _spikes_plain(vals, window, min_history, sigmas, ratio, floor):
    """kl_spike.spikes before its floor short cut (every row's history read)."""
    out = []
    for k in range(min_history, len(vals)):
        hist = [v for _, v in vals[max(0, k - window):k]]
        mu = sum(hist) / len(hist)
        sd = math.sqrt(sum((v - mu) ** 2 for v in hist) / len(hist))
        sd = max(sd, 0.1 * abs(mu))
        i, v = vals[k]
        if v >= floor and v >= ratio * mu and v > mu + sigmas * sd:
            out.append((i, v, mu, sd))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_kl_spikes_floor_short_cut_is_exact(seed):
    rnd = random.Random(seed)
    n = rnd.randint(0, 300)
    pick = [lambda: 0.0, lambda: rnd.random() * 0.06, lambda: rnd.random() * 2, lambda: -rnd.random(),
            lambda: rnd.choice([1e160, 1e-300, 0.05])]
    vals = [(i, pick[rnd.randrange(len(pick) - (0 if seed % 3 == 0 else 1))]()) for i in range(n)]
    args = (rnd.choice([0, 5, 20]), rnd.choice([0, 3, 8]), 6.0, rnd.choice([0.0, 3.0]), rnd.choice([0.0, 0.05, 1.0]))
    try:
        want = _spikes_plain(vals, *args)
    except (OverflowError, ZeroDivisionError) as e:
        with pytest.raises(type(e)):
            kl_spike.spikes(vals, *args)
        return
    assert kl_spike.spikes(vals, *args) == want


@pytest.mark.parametrize("text", ["1/500", " 3/4 ", "a/b", "1/0", "nan/1", "inf/2", "-inf", "1_0", "0.5", "4s", "/", "1h 2s", " 7s ", "s", "nans", "infs", "1e5s", ""])
def test_to_number_of_slashed_texts(text):
    got = metrics.to_number(text)
    v = text.strip()
    try:
        want = float(v)
    except ValueError:
        low = v.lower()
        want = {"nan": math.nan, "-nan": math.nan, "inf": math.inf, "infinity": math.inf, "+inf": math.inf,
                "-inf": -math.inf, "-infinity": -math.inf}.get(low, text)
    assert got == want or (got != got and want != want)
    assert type(got) is type(want)


def test_convert_reads_uncached_values_as_before():
    metrics._CONVERTED.clear()
    keys = ("loss", "grad_norm", "global_step/max_steps", "a", "b", "c")
    for raws in [("0", "0.5", "1/10", "nan", "0", "4s"), ("0", "0.5", "2/10", "inf", "x", "x"), ("1", "1", "1", "1", "1", "1")]:
        got, finite = metrics._convert(keys, raws)
        want = {k: metrics.to_number(r) for k, r in zip(keys, raws)}
        assert list(got) == list(want)
        assert all(a == b or (a != a and b != b) for a, b in zip(got.values(), want.values()))
        assert finite == all(not (type(x) is float and x - x != 0) for x in want.values())
