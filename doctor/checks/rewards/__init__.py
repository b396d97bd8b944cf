"""Checks of the rewards rules (rules/rewards/)."""
