"""The kernel jobs of this server, as the status bar, the stop dialog and the idle stop see them.

A kernel job is one the ``hpc-magics-slurm`` provisioner submitted (its job folder says
``kind: kernel``) from this server. They come from the tracker's
last cycle (one squeue per interval for the user, whatever the number of jobs or tabs);
nothing here asks the scheduler; at a stop, the kernel jobs whose kernels did not take them
along are cancelled as ``hpc-magics kernel cleanup`` cancels them (``kernel/orphans.py``).
A kernel attached to the user's own allocation (``--jobid``) is listed, marked so, and at a
stop only its step is cancelled: never the allocation, which hpc_magics did not create.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.cost import cost_so_far
from ..core.jobs import plain_reason
from ..kernel.orphans import LeftBehind
from ..node.kernel import scancel_target
from .events import TrackedJob


def is_kernel_job(job: TrackedJob) -> bool:
    """A live kernel job started from this server (in an allocation: while the
    kernel runs; the allocation itself outlives it)."""
    return job.kind == "kernel" and job.from_this_server and not job.final and \
        not (job.allocation and job.kernel_over)


def kernel_name(job_name: str) -> str:
    """The kernelspec's name, from the job's: ``kernel-NAME``."""
    return job_name.removeprefix("kernel-")


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


def kernel_job_json(job: TrackedJob, now: float) -> dict[str, Any]:
    """One kernel job for the front end: state, Slurm's reason and expected start while it
    pends, time left and cost so far (the billing rule ``%%sbatch`` uses) while it runs."""
    queued = job.queued
    pending = job.status.phase == "pending"
    reason = queued.reason if queued and pending and queued.reason else ""
    elapsed = queued.elapsed_s if queued and queued.elapsed_s is not None else 0
    cost = cost_so_far(job.request or {}, elapsed) \
        if job.request and not pending and not job.allocation else ""
    return {
        "job_id": job.job_id, "kind": "kernel", "name": kernel_name(job.name),
        "state": job.status.state, "phase": job.status.phase,
        "reason": reason, "reason_text": plain_reason(reason) if reason else "",
        "expected_start": queued.start_time if queued and pending else None,
        "end_time": queued.end_time if queued and not pending else None,
        "seconds_left": seconds_left(job, now), "elapsed_s": elapsed if queued else None,
        "cost": cost or None, "node_list": queued.node_list if queued else "",
        # the user's own allocation: stopping ends the kernel's step, never the allocation
        "own_allocation": job.allocation, "cancels": cancel_target(job),
    }


def cancel_target(job: TrackedJob) -> str | None:
    """What a stop cancels: the kernel's job, or in the user's allocation only its step
    (None before the step started: nothing of the kernel's runs)."""
    return scancel_target(job.job_id, job.step_id, job.allocation)


def describe(jobs: Iterable[TrackedJob]) -> str:
    """``kernel demo (job 12), kernel big (job 13)`` for a log line."""
    return ", ".join(f"kernel {kernel_name(job.name)} ({where(job)})" for job in jobs)


def where(job: TrackedJob) -> str:
    if job.allocation:
        return f"step {cancel_target(job) or 'not started'} of your allocation {job.job_id}"
    return f"job {job.job_id}"


def left_behind(jobs: Iterable[TrackedJob]) -> list[LeftBehind]:
    """The kernel jobs to cancel at a stop, as ``orphans.cancel`` takes them (a kernel whose
    step in the user's allocation never started: nothing of it runs, nothing to cancel)."""
    return [LeftBehind(job.job_id, job.step_id, job.name, job.folder, job.allocation)
            for job in jobs if job.folder is not None and cancel_target(job) is not None]
