"""Reaching a kernel job again after the Jupyter server that started it is gone.

jupyter_server keeps no kernels across restarts, so a kernel job that outlived its server
runs on unreached (with ``--tunnel ssh``, its tunnel ended with the server). ``hpc-magics
kernel connect JOB`` reopens the tunnel and writes a private connection file for
``jupyter console --existing``; the tunnel lives while the command runs.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from ..core.errors import InvalidRequest
from ..core.profiles import load_profile
from ..jobfolder.files import write_atomically
from ..jobfolder.folder import JobFolder
from ..scheduler import job_index
from . import launch
from .orphans import end_tunnel
from .tunnel import SshTunnel, for_kernel


def kernel_folder(job_id: str) -> tuple[JobFolder, dict[str, Any]]:
    """The folder of job ``job_id``'s running kernel, and what the node wrote about it."""
    kernels = job_index.entries(kinds=job_index.KERNEL_KINDS, job_ids=[job_id])
    for folder in job_index.own_folders(reversed(kernels)):  # the newest first
        node = launch.node_info(folder)
        if node is not None and folder.meta().get("kind") == "kernel":
            return folder, node
    raise InvalidRequest(f"no running kernel of job {job_id}: see "
                         "hpc-magics kernel list for the kernels left running")


def connect(job_id: str) -> tuple[Path, SshTunnel | None]:
    """The connection file for job ``job_id``'s kernel, and the tunnel opened for it (None
    where the kernel is reached straight by TCP). Nothing is asked of a job that ended."""
    folder, node = kernel_folder(job_id)
    if launch.gone_from_queue(job_id):
        launch.forget_connection(folder)
        raise InvalidRequest(f"job {job_id} is no longer in squeue: its kernel ended; start "
                             "a new one")
    meta = folder.meta()
    info: dict[str, Any] = dict(node["connection"])
    tunnel = None
    if meta.get("tunnel") == "ssh":
        end_tunnel(meta)  # the one its killed server left: its ports are of no use here
        profile = load_profile(str(meta.get("profile") or "default"))
        tunnel = for_kernel(node, profile, folder.path / launch.TUNNEL_LOG).open()
        info = tunnel.client_info(info)
    # only this user can read it (write_atomically: 0600): it holds the kernel's key
    path = folder.path / f"reconnect-{secrets.token_hex(4)}.json"
    write_atomically(path, json.dumps(info))
    return path, tunnel
