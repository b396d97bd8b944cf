"""``python -m doctor`` runs the same command line as ``grpo-doctor`` (for a venv without its script on PATH)."""

from doctor.cli import main

raise SystemExit(main())
