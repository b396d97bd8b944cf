"""grpo-doctor: names the failure of an ms-swift GRPO run, shows the evidence, computes the fix."""
__version__ = "0.2.0"
