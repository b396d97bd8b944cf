"""Checks of the deps rules (rules/deps/)."""
