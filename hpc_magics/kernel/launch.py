"""Starting a kernel's job: the private folder, the job script, sbatch, or an srun step.

Slurm commands go through ``scheduler.commands`` (the ``srun`` of a step in an existing
allocation too, which outlives the call), sbatch through ``scheduler.submit``.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.jobscript import JobParts, render
from ..core.resources import to_dict
from ..jobfolder.files import read_json, read_tail
from ..jobfolder.folder import JobFolder
from ..node.kernel import CONNECTION_FILE, NODE_FILE
from ..scheduler import commands
from ..scheduler import submit as submission
from .orphans import kernels_root, owner, queued_ids
from .spec import KernelRequest

JOB_SCRIPT = "job.sh"
LOG_NAME = "kernel.log"
TUNNEL_LOG = "tunnel.log"


def new_folder(kernel: KernelRequest, name: str) -> JobFolder:
    folder = JobFolder.create(kernels_root(), name)
    folder.write_meta({"name": name, "kind": "kernel", "backend": "slurm",
                       "profile": kernel.request.profile, "request": to_dict(kernel.request),
                       "allocation": kernel.jobid, "state": "SUBMITTING", "results": [],
                       **owner()})  # who cancels it: a job it outlives is offered for cancel
    return folder


def node_command(kernel: KernelRequest, folder: JobFolder, argv: Sequence[str]) -> list[str]:
    return [kernel.python, "-u", "-m", "hpc_magics.node.kernel", str(folder.path), "--", *argv]


def job_script(kernel: KernelRequest, folder: JobFolder, argv: Sequence[str],
               name: str) -> str:
    """The batch script: the kernel as one srun step, so ``scancel --signal`` reaches it."""
    log = str(folder.path / LOG_NAME).replace("%", "%%")
    step = ["srun", "--unbuffered", "--nodes=1", "--ntasks=1",
            *node_command(kernel, folder, argv)]
    parts = JobParts(
        job_name=name, engine=(("output", log), ("error", log)),
        notes=("hpc_magics: a Jupyter kernel on the node; its connection file is written",
               "to this private folder; shutting the kernel down cancels this job."),
        prologue=("umask 077",), run=(shlex.join(step),))
    return render(kernel.request, kernel.profile(), parts)


def submit(kernel: KernelRequest, folder: JobFolder, argv: Sequence[str], name: str,
           environ: Mapping[str, str] | None = None) -> submission.Submitted:
    """sbatch the kernel's job through the one door (blocking: call it in a thread)."""
    return submission.submit(job_script(kernel, folder, argv, name),
                             folder.path / JOB_SCRIPT, environ)


def start_step(kernel: KernelRequest, folder: JobFolder, argv: Sequence[str],
               environ: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The kernel as a step of the user's allocation ``kernel.jobid``, beside its others."""
    assert kernel.jobid is not None
    return commands.start(["srun", f"--jobid={kernel.jobid}", "--overlap", "--nodes=1",
                           "--ntasks=1", "--unbuffered", *node_command(kernel, folder, argv)],
                          log=folder.path / LOG_NAME, environ=environ)


def gone_from_queue(job_id: str) -> bool:
    """squeue itself, asked once, does not list the user's job (an unknown id counts; an
    unanswered squeue never does)."""
    try:
        return job_id not in queued_ids(steps=False)
    except HpcMagicsError:
        return False


def node_info(folder: JobFolder) -> dict[str, Any] | None:
    """What the node wrote once the kernel's connection file was in place; else None."""
    data, connection = (read_json(folder.path / name) for name in (NODE_FILE, CONNECTION_FILE))
    if not isinstance(data, dict) or not isinstance(connection, dict):
        return None
    return {**data, "connection": connection}


def log_tail(folder: JobFolder, lines: int = 5) -> str:
    try:
        text = read_tail(folder.path / LOG_NAME, 8192)
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def forget_connection(folder: JobFolder) -> None:
    """The key and ports are of no use once the kernel ended: remove them."""
    for name in (CONNECTION_FILE, NODE_FILE):
        (folder.path / name).unlink(missing_ok=True)
