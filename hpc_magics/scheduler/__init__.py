"""Talking to Slurm's command-line tools: one narrow door, and a cached view of jobs."""
