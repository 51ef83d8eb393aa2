"""A handle for a job submitted earlier, from its folder (even after a kernel restart).

Above both kinds of handle: a sweep's folder gives a ``SweepHandle``, any other a
``JobHandle``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .backends import get_backend
from .core.errors import HpcMagicsError
from .core.jobids import parse_job_id, same_job
from .handle import JobHandle
from .jobfolder.folder import JobFolder, check_owned, find_job_folders
from .scheduler.cluster import cluster_name
from .scheduler.job_index import entries, own_folders
from .sweep_handle import SweepHandle


def attach(job: str, jobs_dir: Path) -> JobHandle:
    """A handle for a job submitted earlier (even before a kernel restart).

    A job id the controller reused (ids restart after a cluster reset) can be in several
    folders: the most recent submission on this cluster wins. ``123_4`` finds the folder
    of array job ``123`` when no folder has that task on its own. An id that is both a
    Slurm job's and a local process's (a pid) is refused: its folder's name says which.
    """
    exact, parent = [], []
    wanted = parse_job_id(job)
    folders = list(find_job_folders(jobs_dir))
    if wanted is not None and not any(
            same_job(str(f.meta().get("job_id", "")), job) for f in folders):
        # submitted from another notebook's folder: a Slurm job or a local process
        folders += own_folders(reversed(entries(job_ids=[job])))
    elif wanted is None and not any(f.path.name == job for f in folders):
        # a folder's name (a refused id's answer gives it): another notebook's too
        folders += own_folders(e for e in entries() if e.folder.name == job)
    for folder in folders:
        meta = folder.meta()
        job_id = str(meta.get("job_id", ""))
        if job in {job_id, folder.path.name, meta.get("name")}:
            exact.append((folder, meta))
        elif wanted is not None and job_id and same_job(job_id, job):
            parent.append((folder, meta))
    candidates = exact or parent
    if len({m.get("backend") == "local" for _, m in candidates}) > 1:
        # a pid can equal a Slurm job's id: never guess which one the user saw
        raise HpcMagicsError(
            f"{job} is both a Slurm job and a local process here: give its folder's name "
            f"({', '.join(sorted(f.path.name for f, _ in candidates))})")
    if candidates:
        here = cluster_name() if any(m.get("cluster") for _, m in candidates) else None

        def rank(item: tuple[JobFolder, dict[str, Any]]) -> tuple[bool, float]:
            folder, meta = item
            return (meta.get("cluster") in (None, here),
                    float(meta.get("submitted_at") or folder.path.stat().st_mtime))

        folder, meta = max(candidates, key=rank)
        # an array task found through its job's folder keeps its own id: cancel and state
        # are the task's, never the whole array's
        return handle_of(folder, None if exact else str(wanted))
    raise HpcMagicsError(f"no job {job!r} under {jobs_dir}: see %hpc_jobs for the jobs there")


def handle_of(folder: JobFolder, task: str | None = None) -> JobHandle:
    """The handle of the job in ``folder`` (``task``: one task of its array)."""
    check_owned(folder.path)
    meta = folder.meta()
    # a sweep: one handle for all its tasks
    kind = SweepHandle if task is None and meta.get("kind") == "sweep" else JobHandle
    return kind(task or str(meta["job_id"]), get_backend(meta.get("backend", "auto")), folder,
                meta.get("name", ""))
