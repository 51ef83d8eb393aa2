"""Where job folders go: the one answer for a notebook's kernel, ``hpc-magics submit`` and
``hpc-magics doctor``, so a job submitted from a shell is where ``%hpc_jobs`` looks."""

from __future__ import annotations

import os
from pathlib import Path

JOBS_DIR_VARIABLE, DEFAULT_JOBS_DIR = "HPC_MAGICS_JOBS_DIR", "hpc_jobs"


def jobs_dir_setting() -> str:
    """Where job folders go, as set: ``$HPC_MAGICS_JOBS_DIR``, else ``hpc_jobs``."""
    return os.environ.get(JOBS_DIR_VARIABLE) or DEFAULT_JOBS_DIR


def jobs_root(beside: Path, setting: str | None = None) -> Path:
    """The folder the job folders of a notebook in ``beside`` (its kernel's working
    directory) go in: ``setting`` (``c.HpcMagicsKernel.jobs_dir``), else
    ``jobs_dir_setting()``; a relative one is relative to ``beside``."""
    return (beside / Path(setting or jobs_dir_setting()).expanduser()).resolve()
