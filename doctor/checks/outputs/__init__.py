"""Checks of the outputs rules (rules/outputs/)."""
