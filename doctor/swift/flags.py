"""The flag table of ms-swift: which `swift rlhf` flags exist in which version."""
from __future__ import annotations

# flag -> first ms-swift (major, minor) that has it (swift-notes §1.1, §6)
SINCE: dict[str, tuple[int, int]] = {
    "steps_per_generation": (3, 5),
    "generation_batch_size": (3, 5),
    "num_generations_eval": (3, 12),
}


def flag_exists(version: tuple[int, int] | None, flag: str) -> bool:
    """Does ``flag`` exist in ms-swift ``version`` (major, minor)? An unknown version is taken as a recent one."""
    if version is None:
        return True
    return version >= SINCE.get(flag, (0, 0))
