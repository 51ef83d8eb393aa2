"""Where jobs run: Slurm through submitit, or this machine through submitit's local executor."""

from __future__ import annotations

from .base import Backend, choose_backend_name

__all__ = ["Backend", "choose_backend_name", "get_backend"]


def get_backend(name: str, python: str | None = None) -> Backend:
    """The backend called ``name`` ("auto" picks slurm when sbatch is on PATH)."""
    from .submitit_backend import LocalBackend, SlurmBackend

    resolved = choose_backend_name(name)
    return SlurmBackend(python) if resolved == "slurm" else LocalBackend()
