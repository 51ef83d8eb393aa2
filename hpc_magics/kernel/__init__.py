"""A kernel that runs as a Slurm job (``provisioner``), a session driven from a notebook
(``session``), and ``hpc-magics kernel`` (``command``). An edge layer."""
