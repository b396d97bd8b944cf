"""Checks of the fallback rules (rules/fallback/)."""
