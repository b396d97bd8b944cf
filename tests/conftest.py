from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
# verbatim copies of the shared real-swift captures that unit tests cut at fixed lines (see its README)
REAL_SWIFT = ROOT / "fixtures" / "real-swift"

os.environ.setdefault("NO_COLOR", "1")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
