"""Jobs the local backend runs on this machine, as the watcher sees them.

The local backend (``backends/submitit_backend.py``) notes here the jobs this process
started; the watcher asks here, so it never imports the backend (a layer above it). Jobs
of an earlier process are judged by their process and their results file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any, Protocol

import psutil

from ..core.jobs import normalize_state
from ..jobfolder.folder import JobFolder
from .job_status import JobStatus


class LocalJob(Protocol):
    """What the watcher needs of a running submitit local job."""

    @property
    def state(self) -> str: ...

    def cancel(self, check: bool = ...) -> Any: ...


_started_here: dict[str, LocalJob] = {}
_cancelled: set[str] = set()


def note_started(job_id: str, job: LocalJob) -> None:
    _started_here[job_id] = job


def started_here(job_id: str) -> LocalJob | None:
    return _started_here.get(job_id)


def pid_alive(job_id: str) -> bool:
    """A local job's id is its process id: is that process still running?"""
    try:
        status = psutil.Process(int(job_id)).status()
    except (ValueError, psutil.Error):
        return False
    return status not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


def local_states(folder_by_id: dict[str, JobFolder]) -> dict[str, str]:
    states: dict[str, str] = {}
    for job_id, folder in folder_by_id.items():
        job = started_here(job_id)
        if job is not None:
            state = normalize_state(job.state)
            # the controller ends normally once its cancelled cell has stopped
            cancelled = job_id in _cancelled and state != "RUNNING"
            states[job_id] = "CANCELLED" if cancelled else state
        elif folder.has_results():
            states[job_id] = "FINISHED"
        elif pid_alive(job_id):
            states[job_id] = "RUNNING"
        else:
            states[job_id] = "UNKNOWN"
    return states


def local_status(folder: JobFolder, job_id: str) -> JobStatus:
    """A local job's snapshot for the watcher: its process, else its results file."""
    now = time.time()
    raw = local_states({job_id: folder}).get(job_id, "UNKNOWN")
    outcome = folder.outcome() if raw == "UNKNOWN" else None
    if outcome is not None:
        return JobStatus(job_id, "FAILED" if outcome.failed else "COMPLETED", "results", "",
                         now)
    return JobStatus(job_id, normalize_state(raw), "local", "", now)


def cancel(job_id: str) -> None:
    """End a local job's process group: SIGTERM, then (submitit's) SIGKILL."""
    job = started_here(job_id)
    _cancelled.add(job_id)
    if job is not None:
        job.cancel(check=False)
    elif pid_alive(job_id):  # another kernel's: the controller leads its own group
        try:
            os.killpg(int(job_id), signal.SIGTERM)
        except ProcessLookupError:  # started before it led a group: the process alone
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(job_id), signal.SIGTERM)
        except PermissionError:
            pass
