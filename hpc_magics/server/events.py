"""The server's view of the user's jobs, and the list of jobs that ended while it ran.

One cycle (every ``events_interval_s``, and when a tab asks for the job list) reads the
user's jobs through the shared watcher: the queue view (one ``squeue`` per interval for
the user, however many tabs) plus the job folders of the submission index
(``scheduler/job_index.py``: jobs submitted from any kernel of this user), at most one
``sacct``. The watcher decides every state; this module only notices when a job it saw
alive is now over (or a job submitted after the server started is first seen over, also
one that started and ended between two queue views) and appends an end event with a
sequence number. Tabs poll ``jobs/events?since=N``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.jobs import JobSnapshot
from ..jobfolder.folder import JobFolder, own_job_folder
from ..scheduler import job_index
from ..scheduler.accounting import base_of
from ..scheduler.cluster import UNKNOWN_CLUSTER
from ..scheduler.job_status import JobStatus
from ..scheduler.watcher import Watcher

MAX_EVENTS = 500


@dataclass(frozen=True)
class TrackedJob:
    """One job as the server lists it: the watcher's state plus what squeue showed."""

    job_id: str
    name: str
    status: JobStatus
    queued: JobSnapshot | None = None  # the last squeue entry, while listed
    folder: Path | None = None  # its job folder, when submitted through hpc_magics
    submitted_at: float | None = None
    from_this_server: bool = False
    server_id: str | None = None  # the server whose kernel submitted it (the index's)
    ended_at: float | None = None  # when this server saw it end
    folder_in_root: str | None = None  # the folder relative to the server's root
    kind: str = ""  # "kernel" for a Slurm kernel's own job (its folder says so)
    request: dict[str, Any] | None = None  # a kernel job's resource request (for its cost)
    allocation: bool = False  # a kernel in the user's own allocation (``--jobid``)
    step_id: str = ""  # that kernel's step: the only thing of the allocation that is ours
    kernel_over: bool = False  # the kernel shut down (its allocation may run on)

    @property
    def final(self) -> bool:
        return self.status.final


@dataclass
class JobTracker:
    watcher: Watcher
    server_id: str
    own_job_id: str | None
    root_dir: Path
    keep_ended_s: float = 3600.0  # ended jobs stay listed this long
    started_at: float = field(default_factory=time.time)
    # cycles one at a time (they ask the scheduler, slowly); _lock only guards the data
    _cycle_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _jobs: dict[str, TrackedJob] = field(default_factory=dict, repr=False)
    # (sequence number, the job as it was seen ending)
    _events: deque[tuple[int, TrackedJob]] = field(
        default_factory=lambda: deque(maxlen=MAX_EVENTS), repr=False)
    _seq: int = 0
    error: str | None = None
    updated: float | None = None

    # ------------------------------------------------------------------ reading
    def events_since(self, since: int | None) -> tuple[list[tuple[int, TrackedJob]], int]:
        """The events after ``since`` and the last number, read together (``since``
        ``None``: no events, only where the list is)."""
        with self._lock:
            if since is None:
                return [], self._seq
            return [(seq, job) for seq, job in self._events if seq > since], self._seq

    def jobs(self, keep_ended_s: float | None = None) -> list[TrackedJob]:
        """Live jobs, and those that ended within ``keep_ended_s`` (the list's), newest
        submission first; ``math.inf``: every job known, also one first seen over."""
        keep = self.keep_ended_s if keep_ended_s is None else keep_ended_s
        with self._lock:
            now = time.time()
            shown = [j for j in self._jobs.values() if not j.final or math.isinf(keep) or (
                j.ended_at is not None and now - j.ended_at < keep)]
        return sorted(shown, key=lambda j: -(j.submitted_at or 0.0))

    # ------------------------------------------------------------------ the cycle
    def cycle(self, max_age_s: float | None = None) -> None:
        """Ask the watcher about every known job; note the ones that ended."""
        with self._cycle_lock:  # only cycles change _jobs: reading it here needs no _lock
            view = self.watcher.queue.view(max_age_s)
            cluster = self.watcher.queue.cluster
            now = time.time()
            found: dict[str, TrackedJob] = {}

            # jobs submitted through hpc_magics, from any kernel: their folders decide too
            folders: list[tuple[job_index.Entry, JobFolder]] = []
            for entry in job_index.entries():
                if entry.cluster not in (None, UNKNOWN_CLUSTER, cluster) and \
                        cluster != UNKNOWN_CLUSTER:
                    continue
                folder = JobFolder(entry.folder)
                # the entry still names a folder of ours holding that job (not moved, reused)
                if own_job_folder(folder.path) is not None and \
                        str(folder.meta().get("job_id", "")) == entry.job_id:
                    folders.append((entry, folder))
            # a local-backend job (no cluster) has a process id, not a Slurm id
            slurm = {entry.job_id for entry, _ in folders if entry.cluster is not None}

            def in_queue(entry: job_index.Entry) -> JobSnapshot | None:
                return view.find(entry.job_id) if entry.cluster is not None else None

            # everything else in the user's queue (sbatch in a terminal, other tools),
            # by base id (an array's tasks are one job), and those seen before, until
            # settled; a job over before any view listed it live is new too, if submitted
            # since the server started (squeue still lists it ended, sacct says how)
            others: dict[str, float | None] = {}
            for job in view.jobs:
                if base_of(job.job_id) not in slurm:
                    others.setdefault(base_of(job.job_id), job.submit_time)
            for job in view.ended:
                base = base_of(job.job_id)
                if base not in slurm and base not in self._jobs and \
                        self._since_start(job.submit_time):
                    others.setdefault(base, job.submit_time)
            for key, seen in self._jobs.items():
                if seen.folder is None and key not in others and key not in slurm and \
                        not seen.status.definite and not self._expired(seen, now):
                    others[key] = seen.submitted_at

            # one sacct for both kinds: every unsettled job the queue no longer lists
            self.watcher.prefetch_accounting(
                [e.job_id for e, f in folders if e.cluster is not None
                 and in_queue(e) is None and not self.watcher.latest(f).definite]
                + [job_id for job_id in others if view.find(job_id) is None], max_age_s)
            polled = self.watcher.poll([f for _, f in folders], max_age_s)
            for entry, folder in folders:
                queued = in_queue(entry)
                meta = folder.meta()
                # kernels in one allocation of the user's share its id: one entry each; Slurm
                # jobs are known by id (a queue entry and its folder are one job), local ones
                # by their folder, as their ids are process ids
                key = f"step:{folder.path}" if meta.get("allocation") else \
                    entry.job_id if entry.cluster is not None else f"local:{entry.folder}"
                found[key] = TrackedJob(
                    entry.job_id, entry.name or (queued.name if queued else ""),
                    polled[folder.path], queued, folder.path, entry.submitted_at,
                    entry.server_id == self.server_id, entry.server_id,
                    folder_in_root=in_root(folder.path, self.root_dir),
                    kind=str(meta.get("kind") or ""), request=meta.get("request"),
                    allocation=bool(meta.get("allocation")),
                    step_id=str(meta.get("step_id") or ""),
                    kernel_over=bool(meta.get("kernel_over")))
            states = self.watcher.poll_ids(list(others.items()), max_age_s)
            for job_id, submit_time in others.items():
                listed = view.find(job_id)
                known = self._jobs.get(job_id)
                name = listed.name if listed else (known.name if known else "")
                found[job_id] = TrackedJob(job_id, name, states[job_id], listed, None,
                                           submit_time)

            with self._lock:
                for key, tracked in found.items():
                    self._note(key, tracked, now)
                # ended jobs no longer polled stay listed until they expire
                for key, known in list(self._jobs.items()):
                    if key not in found and (known.final or known.folder is not None) \
                            and (known.ended_at is None or self._expired(known, now)):
                        del self._jobs[key]
                self.updated, self.error = view.updated, view.error

    def _since_start(self, submitted_at: float | None) -> bool:
        """Submitted since this server started (squeue gives whole seconds)."""
        return (submitted_at or 0.0) >= math.floor(self.started_at)

    def _expired(self, job: TrackedJob, now: float) -> bool:
        return job.ended_at is not None and now - job.ended_at >= self.keep_ended_s

    def _note(self, key: str, job: TrackedJob, now: float) -> None:
        before = self._jobs.get(key)
        ended = job.final and job.job_id != self.own_job_id and (
            (before is not None and not before.final)
            or (before is None and self._since_start(job.submitted_at)))
        if before is not None and before.ended_at is not None:
            job = replace(job, ended_at=before.ended_at)
        elif ended:
            job = replace(job, ended_at=now)
        if job.queued is None and before is not None and before.queued is not None \
                and not job.final:
            job = replace(job, queued=before.queued)  # keep partition, limits while it settles
        self._jobs[key] = job
        if ended:
            self._seq += 1
            self._events.append((self._seq, job))


def in_root(path: Path | str, root: Path) -> str | None:
    """``path`` (relative: to the root) relative to the server's root, as the file browser
    and the contents manager name it (jupyter_server gives a kernel its notebook's absolute
    path); None outside the root."""
    path = root / path  # an absolute path stays as it is
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None
