"""Checks of the gpu rules (rules/gpu/)."""
