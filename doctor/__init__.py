"""grpo-doctor: names the failure of an ms-swift GRPO run, shows the evidence, computes the fix."""
__version__ = "0.2.0"

# before any module of the package makes a dataclass: their generated methods come compiled from a cache file
from .fastclasses import install as _install_fastclasses  # noqa: E402

_install_fastclasses()
