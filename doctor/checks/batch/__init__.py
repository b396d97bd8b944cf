"""Checks of the batch rules (rules/batch/)."""
