"""The GPUs a paste's words name: which card (and so how much memory each holds) and how many. People write them every
way ("8卡A800", "4090单卡", "2x A6000 48G", "on 4 H100s", "A100 40GB", "显存24G", "CUDA_VISIBLE_DEVICES=0,1,2,3"); a
memory size next to the card's name wins over the card's usual size. Pure: texts in, a reading out."""
from __future__ import annotations

from dataclasses import dataclass

from ... import lazyre

# a card's memory in GiB as sold; a card sold in two sizes gives the larger one (ASSUMED_LARGER): a claim that the
# run cannot fit then holds on either (A100 40/80 GB, V100 16/32 GB, A800 40/80 GB, H100 80 GB PCIe/SXM, 94 GB NVL)
_CARDS: dict[str, float] = {
    "4090": 24, "4090D": 24, "3090": 24, "3090TI": 24, "4080": 16, "3080": 10, "5090": 32, "4060": 8, "3060": 12,
    "A100": 80, "A800": 80, "H100": 80, "H800": 80, "H20": 96, "H200": 141, "B200": 180, "GH200": 96,
    "A6000": 48, "A40": 48, "L40": 48, "L40S": 48, "A10": 24, "A10G": 24, "L4": 24, "A30": 24, "L20": 48,
    "V100": 32, "T4": 16, "P100": 16, "P40": 24, "910B": 64, "MI300X": 192, "MI250X": 128,
}
ASSUMED_LARGER = frozenset({"A100", "A800", "V100", "H100"})
_NAMES = "|".join(sorted(_CARDS, key=len, reverse=True))
# the name as written: "RTX 4090", "NVIDIA A100-SXM4-80GB", "a800", "Tesla V100", "910B"; "A100s" is a plural
_CARD = lazyre.compile(rf"(?i)(?<![A-Za-z0-9])(?:RTX\s?|GTX\s?|Tesla\s|Ascend\s?|NVIDIA\s)?({_NAMES})(?:s)?(?![A-Za-z0-9])"
                       r"(?:[-\s]?(?:SXM\d?|PCIe|NVL))?(?:[-\s]?(\d{2,3})\s?G(?:i?B)?(?![A-Za-z]))?"
                       r"(?:\s*[(\uff08]\s*(\d{2,3})\s?G(?:i?B)?\s*[)\uff09])?")
# a size before the name ("80GB A100", "24G 4090")
_SIZE_BEFORE = lazyre.compile(rf"(?i)(?<![\d.])(\d{{2,3}})\s?G(?:i?B)?\s*(?:RTX\s?)?(?:{_NAMES})(?![A-Za-z0-9])")
# memory said without a card: "显存24G", "24G显存", "24GB VRAM", "80GB GPU", "GPU memory: 24 GB"
_MEMORY = lazyre.compile(r"(?i)显存\s*(?:为|是|只有|有)?\s*(\d{1,3})\s?G|(?<![\d.])(\d{1,3})\s?G(?:i?B)?\s*(?:的)?\s*"
                         r"(?:显存|VRAM|GPU(?! hours))|GPU memory\s*(?:of|:|is)?\s*(\d{1,3})\s?G")
_COUNT_WORDS = {"one": 1, "single": 1, "a single": 1, "two": 2, "four": 4, "eight": 8, "sixteen": 16,
                "一": 1, "单": 1, "两": 2, "二": 2, "四": 4, "八": 8}
# how many: "8卡", "单卡", "8张A100", "8x A100", "A100*8", "4 GPUs", "two GPUs", "on 4 H100s", "1 GPU"
_COUNT = lazyre.compile(rf"(?i)(?<![\w.])(\d{{1,3}}|one|single|a single|two|four|eight|sixteen)\s?(?:x|×|\*)?\s?"
                        rf"(?:(?:RTX\s?|NVIDIA\s)?(?:{_NAMES})s?|GPUs?|cards?|devices?)(?![A-Za-z0-9])|"
                        rf"(?<![A-Za-z0-9])(?:{_NAMES})\s?(?:x|×|\*)\s?(\d{{1,2}})(?!\d)|"
                        r"(\d{1,3}|[一单两二四八])\s?(?:张|块|卡)")
_VISIBLE = lazyre.compile(r"CUDA_VISIBLE_DEVICES\s*=\s*['\"]?(\d+(?:\s*,\s*\d+)*)")


@dataclass(frozen=True)
class Cards:
    """What the words say of the GPUs. ``gib``: one card's memory; ``how``: "read" when the paste gives the size,
    "assumed" when it comes from the card's name (the larger size of a card sold in two)."""
    name: str | None
    gib: float | None
    how: str
    count: int | None

    def described(self) -> str:
        size = f"{self.gib:g} GB" + ("" if self.how == "read" else " (assumed from its name)")
        return f"{self.name} ({size})" if self.name else f"a {size} GPU"


def _count(text: str) -> int | None:
    m = _VISIBLE.search(text)
    if m:
        return len(m.group(1).split(","))
    for m in _COUNT.finditer(text):
        word = (m.group(1) or m.group(2) or m.group(3) or "").lower()
        n = int(word) if word.isdigit() else _COUNT_WORDS.get(word)
        if n:
            return n
    return None


def cards_said(texts: list[str]) -> Cards | None:
    """The card and count the texts name first, or None when they name neither a card nor a memory size."""
    name = gib = None
    how = "assumed"
    count = None
    for text in texts:
        if name is None:
            m = _CARD.search(text)
            if m:
                name = m.group(1).upper()
                before = None if m.group(2) or m.group(3) else _SIZE_BEFORE.search(text)
                size = m.group(2) or m.group(3) or (before.group(1) if before else None)
                if size:
                    gib, how = float(size), "read"
                else:
                    gib = _CARDS[name]
                    how = "assumed" if name in ASSUMED_LARGER else "read"
        if gib is None:
            m = _MEMORY.search(text)
            if m:
                gib, how = float(next(g for g in m.groups() if g)), "read"
        if count is None:
            count = _count(text)
    if name is None and gib is None:
        return None
    return Cards(name, gib, how, count)


__all__ = ["ASSUMED_LARGER", "Cards", "cards_said"]
