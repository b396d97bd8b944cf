"""Checks of the numerics rules (rules/numerics/)."""
