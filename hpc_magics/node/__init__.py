"""What runs on the compute node: the runner, a task's ranks and checkpoints, staging;
a Slurm kernel's launcher, its walltime warnings and a session kernel's file exchange.

Nothing here imports the kernel side (backends, handles, magics, widgets, server):
a change for the notebook cannot break a running job.
"""
