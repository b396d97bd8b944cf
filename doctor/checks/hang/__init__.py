"""Checks of the hang rules (rules/hang/)."""
