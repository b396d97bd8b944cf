from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
SHARED = ROOT.parent / "shared"

os.environ.setdefault("NO_COLOR", "1")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
