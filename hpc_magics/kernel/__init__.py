"""A kernel that runs as a Slurm job: the whole notebook on a compute node.

``spec`` turns the command line's request into a kernelspec's settings and back;
``launch`` writes and submits the job (or starts a step of an allocation); ``node`` is what
runs on the compute node; ``provisioner`` is the ``jupyter_client`` side; ``command`` is
``hpc-magics kernel``. An edge layer: it may import anything of the package below it.
"""
