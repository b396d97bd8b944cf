"""The batch arithmetic of GRPO (swift-notes §1.1): the completions of one generation step are
world_size x per_device_train_batch_size x steps_per_generation, and must form whole groups of
num_generations. Used by the batch rules, the argument rules and the preflight."""
from __future__ import annotations


def divisors(n: int, start: int = 2) -> list[int]:
    return [d for d in range(start, n + 1) if n % d == 0] if n > 0 else []


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
