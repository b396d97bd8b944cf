"""A version requirement a library states in its own error: "Requires Flash-Attention version >=2.7.1,<=2.8.2 but
got 2.8.3" (xformers/ops/fmha/flash.py), "requires accelerate>=0.20.1" forms where the range and the version found are
both in the message, so the fix names the range instead of "pin the two packages". Pure."""
from __future__ import annotations

from .. import lazyre

_RANGE = lazyre.compile(r"(?i)\brequires? (?P<pkg>[A-Za-z][\w.-]*(?: (?!version\b)[A-Za-z][\w.-]*)?) ?(?:version )?"
                        r"(?P<spec>[<>=!~]=?\s*v?\d[\w.]*(?:\s*,\s*[<>=!~]=?\s*v?\d[\w.]*)*),? but (?:got|found|is|the "
                        r"installed (?:version )?is) v?(?P<got>\d[\w.+]*\w)")
# the display names libraries use in such messages, by their pip names
_PIP = {"flash-attention": "flash-attn", "flash attention": "flash-attn", "flashattention": "flash-attn",
        "pytorch": "torch"}


def required_range(message: str) -> tuple[str, str, str] | None:
    """(package as named, version spec, version found) when the message states both; else None."""
    m = _RANGE.search(message)
    if m is None:
        return None
    return m.group("pkg"), "".join(m.group("spec").split()), m.group("got")


def pip_name(pkg: str) -> str:
    return _PIP.get(pkg.lower(), pkg.lower().replace(" ", "-"))
