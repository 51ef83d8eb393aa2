"""Starting a kernel's job: the private folder, the job script, sbatch, or an srun step.

Every Slurm command goes through ``scheduler.commands`` (the one door: timeouts, no
shell, a scrubbed environment), sbatch through ``scheduler.submit`` (the one submission
door: the kernelspec's request wins over the user's ``SBATCH_*`` defaults). The one process
that outlives a call, the ``srun`` of a step in an existing allocation, is started here with
that same scrubbed environment; it ends with the step, which ends with the allocation's time
limit or ``scancel``.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.jobscript import JobParts, render
from ..core.resources import to_dict
from ..jobfolder.files import read_json, read_tail
from ..jobfolder.folder import JobFolder
from ..node.kernel import CONNECTION_FILE, NODE_FILE
from ..scheduler import commands
from ..scheduler import submit as submission
from ..scheduler.queue import login_name
from .orphans import kernels_root, owner
from .spec import KernelRequest

JOB_SCRIPT = "job.sh"
LOG_NAME = "kernel.log"
TUNNEL_LOG = "tunnel.log"


def new_folder(kernel: KernelRequest, name: str, root: Path | None = None) -> JobFolder:
    folder = JobFolder.create(root or kernels_root(), name)
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
    """sbatch the kernel's job through the one door (blocking: a provisioner calls it in a
    thread); ``SubmissionError`` with sbatch's reason."""
    return submission.submit(job_script(kernel, folder, argv, name),
                             folder.path / JOB_SCRIPT, environ)


def start_step(kernel: KernelRequest, folder: JobFolder, argv: Sequence[str],
               environ: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The kernel as a step of the user's allocation ``kernel.jobid``, beside its others."""
    assert kernel.jobid is not None
    srun = ["srun", f"--jobid={kernel.jobid}", "--overlap", "--nodes=1", "--ntasks=1",
            "--unbuffered", *node_command(kernel, folder, argv)]
    return commands.start(srun, log=folder.path / LOG_NAME, environ=environ)


def scancel(target: str, signal: str | None = None) -> commands.CommandResult:
    """Cancel (or signal) a job or a step ``JOB.STEP``; ``scancel`` answers at once."""
    argv = ["scancel", *([f"--signal={signal}"] if signal else []), target]
    return commands.run(argv, timeout=30)


def gone_from_queue(job_id: str) -> bool:
    """squeue itself, asked once, does not list the user's job (an unknown id counts)."""
    answer = commands.run(["squeue", "-h", "-u", login_name(), "-j", job_id, "-o", "%i"],
                          timeout=30)
    if not answer.ok:
        return "Invalid job id" in answer.stderr
    return not answer.stdout.strip()


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
