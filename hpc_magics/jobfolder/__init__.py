"""A job's folder: the one place that reads and writes a job's files, for kernel and node."""
