"""Where jobs run: Slurm through submitit, or this machine through submitit's local executor
(``submitit_backend.Backend``: submit and cancel; states are the watcher's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import InvalidRequest
from ..scheduler.commands import slurm_available

if TYPE_CHECKING:  # submitit is imported when a backend is made, not before
    from .submitit_backend import Backend

__all__ = ["choose_backend_name", "get_backend"]


def choose_backend_name(name: str) -> str:
    if name == "auto":
        return "slurm" if slurm_available() else "local"
    if name == "slurm" and not slurm_available():
        raise InvalidRequest("--backend slurm: sbatch is not on PATH here; use --backend local "
                             "or run on a cluster login/compute node")
    if name not in {"slurm", "local"}:
        raise InvalidRequest(f"--backend {name!r}: use slurm, local or auto")
    return name


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("auto" picks slurm when sbatch is on PATH)."""
    from .submitit_backend import LocalBackend, SlurmBackend

    resolved = choose_backend_name(name)
    return SlurmBackend() if resolved == "slurm" else LocalBackend()
