"""Checks of the data rules (rules/data/)."""
