"""What grpo-doctor knows about ms-swift, trl and vLLM, written once: versions, the flag table, the batch
arithmetic of GRPO and the memory planner. Rules and the preflight read it; nothing here judges a run."""
