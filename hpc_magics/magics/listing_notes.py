"""What ``%hpc_jobs`` says beside its table: why each job that ended did (the same line
the notebook's error and the job widget show), and what is left of the allocation the
listed jobs draw on, with a warning when their requests add up to more.

Kept apart from ``jobs.py`` (the magic only calls these): each asks Slurm at most once
per listing, for all jobs together (one ``sacct`` for the FAILED ones' steps, one
``sshare`` per account, cached).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest, from_dict
from ..jobfacts import ASKED_ABOUT, end_line, ended_because_all
from ..scheduler.allocation import (
    NO_ACCOUNT,
    default_account,
    queue_lines,
    requested_minutes,
    site_balance_lines,
)
from ..scheduler.commands import slurm_available
from ..scheduler.job_status import SCHEDULER_UNREACHABLE, JobStatus

INDENT = " " * 12  # under the state column of the table


def ended_states(folders: Iterable[Any], polled: Mapping[Path, JobStatus]) -> dict[Path, str]:
    """Each listed job's state to show: a FAILED Slurm job's as its steps tell it (a step
    killed for memory), asked in one sacct for all of them with the CANCELLED ones (who
    cancelled them, for ``end_reason_line``); else the watcher's."""
    shown = {folder.path: polled[folder.path].state for folder in folders}
    asked = {folder.path: polled[folder.path] for folder in folders
             if polled[folder.path].state in ASKED_ABOUT
             and folder.meta().get("backend") == "slurm"}
    away = any(SCHEDULER_UNREACHABLE in (s.note or "") for s in polled.values())
    if asked and not away:  # while Slurm is away the listing asks nobody
        said = ended_because_all({status.job_id: status.state for status in asked.values()})
        shown.update((path, said[status.job_id]) for path, status in asked.items())
    return shown


def end_reason_line(folder: Any, job_id: str, state: str) -> str | None:
    """The indented line under a job that Slurm ended (None for any other)."""
    note = end_line(folder, job_id, state)
    return f"{INDENT}{note}" if note else None


def _left_minutes(request_data: Any, running: bool, elapsed_s: float | None) -> float | None:
    """CPU-minutes a job may still use: all it asked for while it waits, the rest of its
    time while it runs (what it used is in sshare's usage already)."""
    try:
        request = from_dict(request_data or {})
    except (HpcMagicsError, TypeError, ValueError):
        return None
    asked = requested_minutes(request)
    if asked is None or not request.time_s:
        return None
    if running and elapsed_s:
        return asked * max(0.0, 1 - elapsed_s / request.time_s)
    return asked


def _live_jobs(folders: Iterable[Any], polled: Mapping[Path, JobStatus]
               ) -> list[tuple[str | None, float | None]]:
    """(account, CPU-minutes it may still use) of each queued or running Slurm job: the
    notebook's cells, and the kernels and sessions squeue lists (not steps of an
    allocation of yours: that job is counted as itself)."""
    from ..kernel.listing import kernel_jobs

    jobs = []
    for folder in folders:
        status, meta = polled[folder.path], folder.meta()
        if status.final or meta.get("backend") != "slurm":
            continue
        request = meta.get("request") or {}
        elapsed = status.detail.elapsed_s if status.detail is not None else None
        jobs.append((request.get("account"),
                     _left_minutes(request, status.phase == "running", elapsed)))
    try:
        kernels = kernel_jobs()
    except (HpcMagicsError, OSError):  # squeue or the home is silent: the cells still count
        kernels = []
    for meta, job in kernels:
        if not meta.get("allocation"):
            request = meta.get("request") or {}
            jobs.append((request.get("account"),
                         _left_minutes(request, job.phase == "running", job.elapsed_s)))
    return jobs


def allocation_section(folders: Iterable[Any], polled: Mapping[Path, JobStatus],
                       request: ResourceRequest, profile: ClusterProfile) -> list[str]:
    """What is left for the accounts of the queued and running Slurm jobs, kernels and
    sessions included (or, with none,
    of the notebook's request), and whether their requests would exceed it; nothing
    where there is no Slurm. Starts with a blank line."""
    if request.backend == "local" or not slurm_available():
        return []
    if profile.balance_command:  # the site keeps balances in its own tool
        return ["", *site_balance_lines(profile)]
    wanted: dict[str | None, list[float]] = {}
    for account, left in _live_jobs(folders, polled):
        wanted.setdefault(account, []).extend([] if left is None else [left])
    if not wanted:
        wanted[request.account] = []
    if None in wanted and (default := default_account()):
        # jobs without -A go to the user's default account
        wanted.setdefault(default, []).extend(wanted.pop(None))
    lines = [""]
    for account, minutes in sorted(wanted.items(), key=lambda item: str(item[0])):
        lines += queue_lines(account, minutes) if account else [NO_ACCOUNT]
    return lines
