"""Checks of the checkpoint rules (rules/checkpoint/)."""
