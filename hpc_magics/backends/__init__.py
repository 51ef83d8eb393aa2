"""Where jobs run: Slurm through submitit, or this machine through submitit's local executor.

Every backend follows one small protocol (``Backend``): submit and cancel; states are the
watcher's (``scheduler/watcher.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..core.errors import InvalidRequest
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..core.scale import ScaleOptions
from ..jobfolder.folder import JobFolder
from ..scheduler.commands import slurm_available
from ..shipping.packing import Payload

__all__ = ["Backend", "choose_backend_name", "get_backend"]


def choose_backend_name(name: str) -> str:
    if name == "auto":
        return "slurm" if slurm_available() else "local"
    if name == "slurm" and not slurm_available():
        raise InvalidRequest("--backend slurm: sbatch is not on PATH here; use --backend local "
                             "or run on a cluster login/compute node")
    if name not in {"slurm", "local"}:
        raise InvalidRequest(f"--backend {name!r}: use slurm, local or auto")
    return name


class Backend(Protocol):
    name: str

    def preflight(self, request: ResourceRequest, profile: ClusterProfile, *,
                  live: bool = True, submitting: bool = True) -> None:
        """Raise InvalidRequest for what the live scheduler would refuse (``live`` False:
        the profile is another cluster's, or --no-live: ask the scheduler nothing;
        ``submitting`` False: a dry run, which shows the script whether Slurm answers or not)."""

    def job_script(self, folder: str, request: ResourceRequest, profile: ClusterProfile,
                   job_name: str, options: ScaleOptions | None = None) -> str:
        """The exact ``job.sh`` a job in ``folder`` gets; pure, so a dry run can show it."""

    def submit(self, folder: JobFolder, payload: Payload, request: ResourceRequest,
               profile: ClusterProfile, job_name: str,
               options: ScaleOptions | None = None) -> str:
        """Submit and return the job id; ``folder/job.sh`` is then what was submitted.
        ``options``: several tasks, checkpoints, staging (``core/scale.py``)."""

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        """Cancel one job (Slurm: also an array task ``123_4``, a range, a het ``123+0``)."""

    def log_paths(self, job_id: str, folder: JobFolder) -> Sequence[str]:
        """The job's stdout/stderr files, in that order."""


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("auto" picks slurm when sbatch is on PATH)."""
    from .submitit_backend import LocalBackend, SlurmBackend

    resolved = choose_backend_name(name)
    return SlurmBackend() if resolved == "slurm" else LocalBackend()
