"""``python -m doctor`` runs the same command line as ``grpo-doctor`` (for a venv without its script on PATH)."""

from doctor.cli import main

if __name__ == "__main__":  # a module walk (tests importing every module) must not run the CLI
    main()
