"""Checks of the args rules (rules/args/)."""
