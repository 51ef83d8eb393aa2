"""Command-line front ends of the checker: ``hpc-magics check`` and ``hpc-magics profiles``."""
