"""The kernel and session jobs in ``%hpc_jobs``: their state, time left and cost so far.

One look at the user's cached squeue view for all of them (the same view the provisioner
polls); only jobs that view lists are shown: a kernel that ended costs nothing more. Only
the folders of the jobs that view lists are read (found by job id in the one job index,
``scheduler/job_index.py``), however many kernels the user started before.
"""

from __future__ import annotations

import time
from typing import Any

from ..core.cost import estimate
from ..core.errors import HpcMagicsError
from ..core.jobs import JobSnapshot
from ..core.profiles import load_profile
from ..core.resources import from_dict
from ..core.units import format_duration
from ..scheduler import job_index
from ..scheduler.watcher import watcher

LOOK_MAX_AGE_S = 0.5  # the user asked now: one squeue for all kernels, not a stale view
HEADER = f"{'job':>10}  {'state':<12} {'kind':<8} {'time left':<10} {'cost so far':<16} name"


def cost_so_far(request_data: dict[str, Any], elapsed_s: float) -> str:
    """What the job has cost until now under its profile's billing rule ("" when unknown)."""
    try:
        request = from_dict(request_data).changed(time_s=max(1, int(elapsed_s)))
        cost = estimate(request, load_profile(request.profile))
    except (HpcMagicsError, TypeError, ValueError):
        return ""
    if cost.billed is None:
        return ""
    return f"{cost.billed:.4f} {cost.billed_unit}"  # a new kernel has cost little


def time_left(job: JobSnapshot, now: float) -> str:
    if job.end_time and job.phase == "running":
        return format_duration(job.end_time - now)
    if job.time_limit_s:
        return format_duration(job.time_limit_s - (job.elapsed_s or 0))
    return "-"


def kernel_jobs(wanted: set[str] | None = None,
                fresh: bool = True) -> list[tuple[dict[str, Any], JobSnapshot]]:
    """Each kernel or session job of this user that squeue still lists: its folder's meta
    and its queue entry; not ``fresh``: from the last view any process saw, asking nobody
    (Slurm is away)."""
    if not job_index.any_entry(job_index.KERNEL_KINDS):
        return []  # no kernel lately: no squeue either
    # the watcher's queue: its cluster name is known (a new JobQueue asks scontrol, which
    # waits out its time-out while the controller is away) and its looks are bounded
    queue = watcher().queue
    last = queue.peek()  # asks nobody
    if last is not None and (last.error is not None or not fresh):
        view = last  # the controller is away: its last answer, asking nobody
    elif last is not None and last.updated is not None \
            and time.time() - last.updated <= LOOK_MAX_AGE_S:
        view = last
    else:  # one squeue now, waited for half a second at most (never its whole time-out)
        view = queue.look_now()
    alive: dict[str, JobSnapshot] = {}
    for entry in view.jobs:  # the first entry of a job id, as view.find gives
        if wanted is None or entry.state in wanted:
            alive.setdefault(entry.job_id, entry)
    found = []
    kernels = job_index.entries(kinds=job_index.KERNEL_KINDS, job_ids=alive)
    for folder in job_index.own_folders(reversed(kernels)):  # newest first
        meta = folder.meta()
        job = alive.get(str(meta.get("job_id", "")))
        if job is not None and meta.get("kind") == "kernel":
            found.append((meta, job))
    return found


def kernel_lines(wanted: set[str] | None = None, fresh: bool = True) -> list[str]:
    """One line per kernel or session job of this user that squeue still lists."""
    now, lines = time.time(), []
    for meta, job in kernel_jobs(wanted, fresh):
        name = str(meta.get("name", ""))
        kind = "session" if name.startswith("kernel-session-") else "kernel"
        if meta.get("allocation"):
            cost = "(your allocation)"  # the step asked Slurm for nothing of its own
        else:
            cost = cost_so_far(meta.get("request", {}), job.elapsed_s or 0) or "-"
        lines.append(f"{job.job_id:>10}  {job.state:<12} {kind:<8} "
                     f"{time_left(job, now):<10} {cost:<16} {name}")
    return lines
