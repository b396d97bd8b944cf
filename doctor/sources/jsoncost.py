"""What decoding a JSON text with ``json.loads`` would cost in memory, told from its bytes before decoding.

json.loads builds a Python object per value: an empty ``{}`` or ``[]`` (3 bytes with its comma) costs a 56-64 byte
object and an 8-byte slot, so a file of them takes ~25x its size (an 8 MiB trainer_state.json of ``{}`` entries:
240 MiB peak; a 16 MiB weight index: 454 MiB). Real side files cost 2-6x (a trainer_state.json of 8,700 logged
steps, 8 MiB: ~17 MiB). The estimate counts what makes objects (brackets, commas, quotes) at C speed and is an upper
bound of the decoded size on every shape measured (tests/test_json_cost.py); a file over ``BUDGET`` is not decoded
whole: its reader streams it or names it as not read.
"""
from __future__ import annotations

# peak RSS stays under 150 MiB with the process's own ~50 MiB: a side file may cost at most this much to decode
BUDGET = 80 << 20


def decode_cost(raw: bytes) -> int:
    """Bytes json.loads would allocate at most for ``raw``: the text itself (raw, its decoded str, copies of strings)
    plus an object per container, value and string."""
    containers = raw.count(b"{") + raw.count(b"[")
    return 4 * len(raw) + 80 * containers + 48 * raw.count(b",") + 32 * raw.count(b'"')


def too_costly(raw: bytes) -> str | None:
    """A one-line reason not to decode ``raw`` whole, or None."""
    cost = decode_cost(raw)
    if cost <= BUDGET:
        return None
    return f"decoding its {len(raw):,} bytes would take about {cost >> 20} MiB (over {BUDGET >> 20} MiB): not read"
