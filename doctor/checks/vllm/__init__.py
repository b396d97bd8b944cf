"""Checks of the vllm rules (rules/vllm/)."""
