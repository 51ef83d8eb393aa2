"""What runs on the compute node: the runner, a task's ranks and checkpoints, staging;
a Slurm kernel's launcher and its walltime warnings.

Nothing here imports the kernel side (backends, handles, magics, widgets, server):
a change for the notebook cannot break a running job.
"""
