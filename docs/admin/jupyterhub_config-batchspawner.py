"""JupyterHub with batchspawner's SlurmSpawner: each user's server is a Slurm job, and
hpc_magics runs in it.

Tested: tests/hub/test_batchspawner_hub.py installs it as docs/admin/install.md says (a
fresh venv, the wheel with its server extra, jupyterhub, batchspawner) and starts a real
JupyterHub with this very file on the project's Slurm test cluster, as a hub account
spawning for another user through the default ``sudo -E -u {username}``; that user's
kernel, through the hub's proxy, runs ``%hpc_doctor`` and a ``%%sbatch --wait`` cell.
The lines marked SITE are the ones a centre changes.

What the hub's host needs: Slurm's commands (sbatch, squeue, scancel) configured for the
cluster; the hub runs as root (or as a hub account with a sudo rule for them, see
``exec_prefix`` below). What the compute nodes need: the environment below, on a file
system every node mounts.
"""

import socket
import sys
from pathlib import Path

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (JupyterHub provides it)

# The environment users' servers run in: here the hub's own, installed on a shared file
# system (e.g. python3 -m venv /opt/jupyterhub; /opt/jupyterhub/bin/pip install jupyterhub
# batchspawner hpc_magics[server]). Installing the hpc_magics wheel there enables its server
# extension for every server started from it (etc/jupyter/jupyter_server_config.d).
ENV = Path(sys.prefix)  # SITE, if users' servers run from another environment

c.JupyterHub.spawner_class = "batchspawner.SlurmSpawner"

# The servers on the compute nodes call the hub's API: it listens on every address and
# tells them the login node's name.
c.JupyterHub.hub_ip = "0.0.0.0"
c.JupyterHub.hub_connect_ip = socket.getfqdn()  # SITE: a name the nodes resolve

# batchspawner-singleuser picks a free port on the node and tells the hub; it starts
# jupyterhub-singleuser, which loads hpc_magics' server extension (SLURM_JOB_ID is the
# server's own job: the status bar, walltime warnings and the stop button use it).
c.SlurmSpawner.batchspawner_singleuser_cmd = str(ENV / "bin" / "batchspawner-singleuser")
c.SlurmSpawner.cmd = [str(ENV / "bin" / "jupyterhub-singleuser")]

# The job every server is: {partition}, {runtime}, ... fill batchspawner's sbatch script.
c.SlurmSpawner.req_partition = "debug"  # SITE
c.SlurmSpawner.req_runtime = "8:00:00"  # SITE: the server's walltime
c.SlurmSpawner.req_nprocs = "2"  # SITE: CPUs of the server's job
c.SlurmSpawner.req_memory = "4G"  # SITE
c.SlurmSpawner.start_timeout = 300  # a job may wait in the queue before it starts
c.SlurmSpawner.http_timeout = 120  # the server's first start on a node imports a lot

# The hub runs sbatch, squeue and scancel as the user: by default through
# ``sudo -E -u {username}``, so a hub running as root needs nothing more. A hub running
# as a service account needs a sudo rule allowing it exactly these commands as the users:
#   jupyterhub ALL=(%jupyterusers) NOPASSWD:SETENV: /usr/bin/sbatch, /usr/bin/squeue, /usr/bin/scancel  # noqa: E501
# c.SlurmSpawner.exec_prefix = "sudo -E -u {username}"

# hpc_magics, set once for every user's server and every kernel it starts:
c.SlurmSpawner.environment = {
    # at most one squeue and one sacct per user per this many seconds, however many
    # kernels and tabs a user has (the load on slurmctld: benchmarks/bench_hub_load.py)
    "HPC_MAGICS_POLL_INTERVAL": "30",  # SITE
}
c.SlurmSpawner.args = [
    # stop an idle server (no busy kernel, nobody in a tab) and end its job: the
    # allocation is not spent on an open browser tab over the weekend
    "--HpcMagicsServer.idle_stop_minutes=120",  # SITE (0: never)
]
