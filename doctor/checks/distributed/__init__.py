"""Checks of the distributed rules (rules/distributed/)."""
