"""Checks of the memory rules (rules/memory/)."""
