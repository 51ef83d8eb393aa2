"""Jobs the local backend runs on this machine, as the watcher sees them (the backend is a
layer above it): those this process started, noted here; an earlier process's, by their
results file and their controller, known by pid and start time (``processes.py``).
"""

from __future__ import annotations

import signal
import time
from typing import Any

from ..core.jobs import normalize_state
from ..jobfolder.folder import JobFolder
from . import processes
from .job_status import JobStatus

# in meta.json: when the controller started (processes.started), beside its pid, the job id
PROCESS_STARTED = "process_started"
# in meta.json: when the controller stopped the job at its time limit (local_controller.py)
TIME_LIMIT_REACHED = "time_limit_reached"


_started_here: dict[str, Any] = {}  # submitit's local jobs: their .state, .cancel()
_cancelled: set[str] = set()


def note_started(job_id: str, job: Any) -> None:
    _started_here[job_id] = job


def local_status(folder: JobFolder, job_id: str) -> JobStatus:
    """A local job's snapshot for the watcher: its results' outcome once they are whole
    (the folder proves how the cell ended, also while its process exits: a failed cell is
    FAILED, not the controller's normal end), else its process. A job its controller
    stopped at the time limit is TIMEOUT once that process ended, as under Slurm."""
    job = _started_here.get(job_id)
    state = normalize_state(job.state) if job is not None else None
    source = "local"
    outcome = folder.outcome()
    timed_out = TIME_LIMIT_REACHED in folder.meta()
    if job_id in _cancelled and state not in (None, "RUNNING"):
        state = "CANCELLED"  # the controller ends normally once its cell stopped
    elif timed_out and state not in (None, "RUNNING"):
        state = "TIMEOUT"
    elif outcome is not None:
        state, source = ("FAILED" if outcome.failed else "COMPLETED"), "results"
    elif state is None:
        # a local job's id is its controller's pid: that very process (the start time its
        # folder recorded) still runs; a pid reused since does not
        alive = processes.alive(job_id, folder.meta().get(PROCESS_STARTED))
        state = "RUNNING" if alive else "TIMEOUT" if timed_out else "UNKNOWN"
    return JobStatus(job_id, state, source, "", time.time())


def cancel(job_id: str, folder: JobFolder) -> None:
    """End a local job's process group: SIGTERM, then (submitit's) SIGKILL; another
    kernel's job by SIGTERM to the controller's group (it leads one), only while the
    recorded controller still runs."""
    job = _started_here.get(job_id)
    _cancelled.add(job_id)
    if job is not None:
        job.cancel(check=False)
    else:
        processes.signal_group(job_id, folder.meta().get(PROCESS_STARTED), signal.SIGTERM)
