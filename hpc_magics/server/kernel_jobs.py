"""The kernel jobs of this server, as the status bar, the stop dialog and the idle stop see them.

A kernel job is one the ``hpc-magics-slurm`` provisioner submitted (its job folder says
``kind: kernel``; sessions are kernels too) from a process of this server: the server
itself, or one of its notebook kernels (``%hpc_session``). They come from the tracker's
last cycle (one squeue per interval for the user, whatever the number of jobs or tabs);
nothing here asks the scheduler, except the cancel at a stop, through the watcher, which
cancels only jobs squeue lists as the user's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.pending_reasons import plain_reason
from ..kernel.listing import cost_so_far
from ..scheduler.watcher import Watcher
from .events import TrackedJob

KERNEL_PREFIX = "kernel-"
SESSION_PREFIX = "kernel-session-"


def is_kernel_job(job: TrackedJob) -> bool:
    """A live kernel or session job started from this server."""
    return job.kind == "kernel" and job.from_this_server and not job.final


def kernel_jobs(jobs: Iterable[TrackedJob]) -> list[TrackedJob]:
    return [job for job in jobs if is_kernel_job(job)]


def kernel_name(job_name: str) -> tuple[str, str]:
    """(kind, name) from the job's name: ``kernel-NAME`` or ``kernel-session-NAME``."""
    if job_name.startswith(SESSION_PREFIX):
        return "session", job_name[len(SESSION_PREFIX):]
    return "kernel", job_name.removeprefix(KERNEL_PREFIX)


def seconds_left(job: TrackedJob, now: float) -> int | None:
    """Running: until its end time; pending: its whole time limit."""
    queued = job.queued
    if queued is None:
        return None
    if queued.end_time and job.status.phase == "running":
        return max(0, int(queued.end_time - now))
    if queued.time_limit_s:
        return max(0, queued.time_limit_s - (queued.elapsed_s or 0))
    return None


def kernel_job_json(job: TrackedJob, now: float | None = None) -> dict[str, Any]:
    """One kernel job for the front end: state, Slurm's reason and expected start while it
    pends, time left and cost so far (the billing rule ``%%sbatch`` uses) while it runs."""
    now = time.time() if now is None else now
    queued = job.queued
    kind, name = kernel_name(job.name)
    pending = job.status.phase == "pending"
    reason = queued.reason if queued and pending and queued.reason else ""
    elapsed = queued.elapsed_s if queued and queued.elapsed_s is not None else 0
    cost = cost_so_far(job.request or {}, elapsed) if job.request and not pending else ""
    return {
        "job_id": job.job_id, "kind": kind, "name": name, "state": job.status.state,
        "phase": job.status.phase,
        "reason": reason, "reason_text": plain_reason(reason) if reason else "",
        "expected_start": queued.start_time if queued and pending else None,
        "end_time": queued.end_time if queued and not pending else None,
        "seconds_left": seconds_left(job, now), "elapsed_s": elapsed if queued else None,
        "cost": cost or None, "node_list": queued.node_list if queued else "",
    }


def describe(jobs: Iterable[TrackedJob]) -> str:
    """``kernel demo (job 12), session s1 (job 13)`` for a log line."""
    return ", ".join(f"{kernel_name(job.name)[0]} {kernel_name(job.name)[1]} "
                     f"(job {job.job_id})" for job in jobs)


def cancel_all(watcher: Watcher, jobs: Iterable[TrackedJob]) -> list[str]:
    """scancel each job squeue still lists as the user's; the lines to log. A kernel whose
    manager shut it down already took its job along: "not one of your jobs" is no error."""
    said = []
    for job in jobs:
        try:
            watcher.cancel(job.job_id)
            said.append(f"cancelled kernel job {job.job_id}")
        except LookupError:
            said.append(f"kernel job {job.job_id} had ended already")
        except HpcMagicsError as error:
            said.append(f"could not cancel kernel job {job.job_id}: {error}")
    return said
