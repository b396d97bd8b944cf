"""Fleet: a failed job diagnosed where it ran (a Slurm epilog, a follow-up job, a Kubernetes sidecar), one JSON record
per job in a directory on a shared file system, and one view across the records (``grpo-doctor fleet report``).

No service of our own: the store is plain files, each written whole and renamed into place, so that hooks on many
nodes never lock each other and any tool (DuckDB, jq, pandas) reads it as it is."""
