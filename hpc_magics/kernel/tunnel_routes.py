"""How the login host reaches a Slurm kernel's ports: the choices, as data.

Apart from ``tunnel.py`` so that ``%load_ext`` (whose ``%hpc_session --tunnel`` lists them)
imports no scheduler or profile code."""

TUNNELS = {"tcp": "connect to the node's address directly (the default)",
           "ssh": "forward the kernel's ports through `ssh NODE` (nodes' ports closed)"}
