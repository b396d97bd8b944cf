"""Checks of the config rules (rules/config/)."""
