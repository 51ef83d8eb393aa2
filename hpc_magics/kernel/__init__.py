"""A kernel that runs as a Slurm job (``provisioner``) and ``hpc-magics kernel``
(``command``). An edge layer."""
