"""The batch arithmetic of GRPO (swift-notes §1.1): the completions of one generation step are
world_size x per_device_train_batch_size x steps_per_generation, and must form whole groups of
num_generations. Used by the batch rules, the argument rules and the preflight."""
from __future__ import annotations

DIVISOR_SCAN = 100_000  # trial division bound: a 23-digit batch size from a log must not take forever


def divisors(n: int, start: int = 2) -> list[int]:
    """The divisors of ``n`` from ``start`` up. Beyond DIVISOR_SCAN**2 only the divisors up to DIVISOR_SCAN and
    their cofactors are listed (each still divides ``n``): bounded work for any number read from an input."""
    if n <= 0:
        return []
    small = [d for d in range(1, min(n, DIVISOR_SCAN) + 1) if n % d == 0]
    found = set(small) | {n // d for d in small}
    return sorted(d for d in found if d >= start)


def nearest(values: list[int], target: int, k: int = 4) -> list[int]:
    return sorted(sorted(values, key=lambda v: (abs(v - target), -v))[:k])


def multiples_around(x: int, step: int) -> list[int]:
    """The multiples of ``step`` nearest to ``x`` (one below if positive, one above)."""
    if step <= 0:
        return []
    lo = (x // step) * step
    hi = lo + step if lo != x else x
    out = [v for v in (lo, hi) if v > 0]
    return sorted(set(out)) or [step]
