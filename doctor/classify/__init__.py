"""Structural classification of failures no rule names: where a message is raised (raise_sites)."""
