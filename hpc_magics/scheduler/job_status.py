"""What the watcher knows of a job: its status snapshot, its submission (read from the
job folder) and the rules that combine states; the watcher (``watcher.py``) decides them."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.jobs import FAILED_STATES, RUNNING_STATES, SUCCESS_STATES, JobSnapshot, is_final, phase
from ..core.jobscript import log_name
from ..jobfolder.files import REQUEUED_AT, read_segment
from ..jobfolder.folder import JobFolder
from . import job_index
from .cluster import UNKNOWN_CLUSTER, cluster_name

# Clocks of the submitting host and the controller differ a little.
CLOCK_SLACK_S = 60.0
# A queue view must postdate sbatch's return by this much before "not listed" means "gone".
QUEUE_MARGIN_S = 1.0
# sacct lags the scheduler by up to ~1.5 s: when it is reachable but silent, give it this
# long after the job left the queue before calling the job ENDED.
SACCT_LAG_S = 5.0

UNREACHABLE = "accounting unreachable"


DEFINITE_SOURCES = frozenset({"sacct", "squeue", "local"})


@dataclass(frozen=True)
class JobStatus:
    """An immutable snapshot of one job's state and where it came from."""

    job_id: str
    state: str
    source: str  # squeue, sacct, results, queue (gone twice), recorded, local
    note: str = ""  # e.g. "accounting unreachable"
    checked_at: float = 0.0
    # the queue's entry (reason, start or its estimate, elapsed, limit, nodes), while listed
    detail: JobSnapshot | None = None
    detail_at: float = 0.0  # when squeue gave that entry (its elapsed time is from then)

    @property
    def final(self) -> bool:
        return is_final(self.state)

    @property
    def definite(self) -> bool:
        """Final and from Slurm itself: nothing later can change it."""
        return self.final and self.source in DEFINITE_SOURCES

    @property
    def phase(self) -> str:
        return phase(self.state)


@dataclass(frozen=True)
class Submission:
    """How a job folder's job is known: cluster, id and when sbatch ran."""

    job_id: str
    backend: str
    cluster: str | None
    submitted_at: float | None  # just before sbatch
    returned_at: float | None  # just after sbatch returned
    # a checkpointed job's latest requeue, noted by its rank 0: Slurm gives the requeued
    # job a new submit time, so an entry submitted then is still this job
    requeued_at: float | None = None
    name: str | None = None  # the job name given to sbatch
    folder: Path | None = None

    @classmethod
    def of(cls, folder: JobFolder, meta: dict[str, Any] | None = None,
           job_id: str | None = None) -> Submission:
        """The folder's job, or ``job_id`` (one of its array tasks)."""
        meta = folder.meta() if meta is None else meta
        requeued_at = None
        if (meta.get("scale") or {}).get("checkpoint"):  # only these requeue themselves
            requeued_at = as_float(read_segment(folder.path).get(REQUEUED_AT))
        return cls(job_id or str(meta.get("job_id", "")), str(meta.get("backend", "slurm")),
                   meta.get("cluster"), as_float(meta.get("submitted_at")),
                   as_float(meta.get("submit_returned_at")), requeued_at,
                   meta.get("name") or None, folder.path)

    @property
    def seen_after(self) -> float:
        """A queue view taken after this has had the chance to list the job."""
        return (self.returned_at or self.submitted_at or 0.0) + QUEUE_MARGIN_S

    def matches(self, submit_time: float | None, name: str | None = None) -> bool:
        """Could a scheduler entry submitted at ``submit_time`` be this folder's job?"""
        if submit_time is None or self.submitted_at is None:
            return True  # nothing to compare: trust the id
        if self.requeued_at is not None and abs(submit_time - self.requeued_at) <= CLOCK_SLACK_S:
            return True
        latest = self.returned_at or self.submitted_at  # record_submission notes both
        if self.submitted_at - CLOCK_SLACK_S <= submit_time <= latest + CLOCK_SLACK_S:
            return True
        return submit_time > latest and self.requeued_by_slurm(name)

    def requeued_by_slurm(self, name: str | None) -> bool:
        """A later entry under this id and name, after the job had started, is the job
        requeued by Slurm itself (a node failure or preemption with ``--requeue``): Slurm
        keeps id and name and gives it a new submit time. An id reused after a controller
        reset would need the same name too; a job not yet started cannot have been requeued."""
        if not name or name != self.name or self.folder is None:
            return False
        return any(self.folder.glob(log_name(self.job_id, "*", "out")))

    def on_this_cluster(self, current: str) -> bool:
        return (self.cluster in (None, UNKNOWN_CLUSTER) or current == UNKNOWN_CLUSTER
                or self.cluster == current)


def as_float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def combined_state(states: Sequence[str]) -> str:
    """One state for a job with several entries (an array's tasks, het components)."""
    if not states:
        return "UNKNOWN"
    live = [s for s in states if not is_final(s)]
    if live:
        return next((s for s in live if s in RUNNING_STATES), live[0])
    failed = next((s for s in states if s in FAILED_STATES), None)
    return failed or next((s for s in states if s not in SUCCESS_STATES), "COMPLETED")


def record_submission(folder: JobFolder, job_id: str, started_at: float,
                      cluster: str | None = None) -> None:
    """After sbatch returned: the id, cluster (sbatch's answer names it with ``-M``, else
    the one here) and submission window, for later matching."""
    meta = folder.meta()
    backend = str(meta.get("backend", "slurm"))
    submitted = as_float(meta.get("submitted_at"))
    server_id = os.environ.get(job_index.SERVER_ID_ENV) or None  # whose kernel this is
    submitted_at = min(submitted, started_at) if submitted is not None else started_at
    if backend == "slurm":
        cluster = cluster or cluster_name()
    folder.update_meta(
        job_id=job_id, state="SUBMITTED", state_source="recorded",
        submitted_at=submitted_at, submit_returned_at=time.time(), cluster=cluster,
        server_id=server_id)
    # the one index of the user's jobs, wherever the notebook was
    job_index.note(job_index.Entry(folder.path.absolute(), job_id, cluster, submitted_at,
                                   server_id, str(meta.get("name") or ""),
                                   job_index.kind_of(meta)))


def status_key(folder: JobFolder, job_id: str | None) -> str:
    return str(folder.path) if job_id is None else f"{folder.path}#{job_id}"
