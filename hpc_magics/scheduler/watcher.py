"""The one place that decides job states; everything else reads its snapshots.

States are only ever what Slurm said or what the job folder proves (the user's side:
docs/how-it-works.md, "Good citizen"). The queue view (one ``squeue`` per interval for the
user, ``JobQueue``) first; then one ``sacct`` per interval for every job that has left it,
a final state never asked again (while sacct fails: "accounting unreachable", and only the
queue and the folder decide); then the folder: its result file, once the job has left the
queue, is COMPLETED (FAILED when the cell raised) until accounting says otherwise, and a
view taken before that file was written that still says pending is RUNNING. Absent from two
views taken after ``sbatch`` returned, with nothing from accounting: ENDED. After our own
``scancel`` a started job is COMPLETING and a queued one keeps its state, "cancel sent",
until a squeue asked after it, or a final state, says more. An entry with the job's id but
submitted outside the folder's sbatch call is some other job (ids are reused after a
reset).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.efficiency import Usage
from ..core.jobids import same_job
from ..core.jobs import RUNNING_STATES, normalize_state, phase
from ..jobfolder.files import OUTCOME_FILE, store_usage, stored_usage
from ..jobfolder.folder import JobFolder
from ..jobfolder.tasks import task_outcome
from .accounting import AccountingRecord, NotYet, SharedAccounting, base_of
from .job_status import (
    SACCT_LAG_S,
    UNREACHABLE,
    JobStatus,
    Submission,
    combined_state,
    status_key,
)
from .local_jobs import local_status
from .queue import ANSWER_WITHIN_S, SCHEDULER_SILENT, JobQueue, QueueView

# a job this process cancelled, while no squeue asked since says what became of it
CANCEL_SENT = "cancel sent; waiting for Slurm to confirm"
# what a poll decides: (status key, the job's folder or None, how it was submitted, last state)
Target = tuple[str, JobFolder | None, Submission, JobStatus]


class Watcher:
    """Decides states from batched scheduler answers; keeps the latest snapshot per job."""

    def __init__(self, queue: JobQueue | None = None,
                 accounting: SharedAccounting | None = None) -> None:
        self._queue = queue
        self._accounting_cache = accounting
        self._lock = threading.RLock()
        self._latest: dict[str, JobStatus] = {}
        self._as_of: dict[str, float] = {}  # key → when the queue view its snapshot used began
        self._absent: dict[str, list[float]] = {}  # folder → queue views that missed it
        # meta.json per folder during one poll: a sweep's thousand tasks share one read
        self._metas: dict[Path, dict[str, Any]] | None = None
        self._cancelled_at: dict[str, float] = {}  # job id → when our scancel of it returned

    @contextlib.contextmanager
    def _one_meta_read(self) -> Iterator[None]:
        """Within: each folder's meta.json is read once (``_remember`` forgets what it writes)."""
        outer = self._metas
        self._metas = {} if outer is None else outer
        try:
            yield
        finally:
            self._metas = outer

    def _meta(self, folder: JobFolder) -> dict[str, Any]:
        metas = self._metas
        if metas is not None and folder.path not in metas:
            metas[folder.path] = folder.meta()
        return folder.meta() if metas is None else metas[folder.path]

    @property
    def queue(self) -> JobQueue:
        if self._queue is None:  # a kernel never waits on a silent scheduler
            self._queue = JobQueue(answer_within_s=ANSWER_WITHIN_S)
        return self._queue

    @property
    def accounting(self) -> SharedAccounting:
        if self._accounting_cache is None:  # the user's, as the queue's
            queue = self.queue
            self._accounting_cache = SharedAccounting(
                user=queue.user, cluster=queue.cluster, interval_s=queue.interval_s,
                cache_dir=queue.cache_dir)
        return self._accounting_cache

    # ------------------------------------------------------------------ reading
    def latest(self, folder: JobFolder, job_id: str | None = None) -> JobStatus:
        """The last snapshot of the folder's job (or of ``job_id``, one of its array
        tasks), without asking anyone."""
        with self._lock:
            known = self._latest.get(status_key(folder, job_id))
        if known is not None:
            return known
        meta = self._meta(folder)
        if job_id is not None and job_id != str(meta.get("job_id", "")):
            return JobStatus(job_id, "UNKNOWN", "recorded")
        return JobStatus(str(meta.get("job_id", "")), str(meta.get("state") or "UNKNOWN"),
                         str(meta.get("state_source") or "recorded"),
                         str(meta.get("state_note") or ""))

    def latest_jobs(self, jobs: Sequence[tuple[JobFolder, str | None]]) -> list[JobStatus]:
        """``latest`` of many (folder, job id) pairs, each folder's meta.json read once."""
        with self._lock, self._one_meta_read():
            return [self.latest(folder, job_id) for folder, job_id in jobs]

    # ------------------------------------------------------------------ polling
    def poll(self, folders: Iterable[JobFolder],
             max_age_s: float | None = None) -> dict[Path, JobStatus]:
        """Fresh snapshots of all ``folders`` jobs: one squeue, at most one sacct."""
        folders = list(folders)
        polled = self.poll_jobs([(folder, None) for folder in folders], max_age_s)
        return {folder.path: polled[status_key(folder, None)] for folder in folders}

    def poll_jobs(self, jobs: Sequence[tuple[JobFolder, str | None]],
                  max_age_s: float | None = None) -> dict[str, JobStatus]:
        """Like ``poll``, for (folder, job id) pairs: ``job id`` names one array task of
        the folder's job (``None``: the folder's own job). Keyed by ``status_key``."""
        with self._lock, self._one_meta_read():
            targets = [(status_key(folder, job_id), folder,
                        Submission.of(folder, self._meta(folder), job_id),
                        self.latest(folder, job_id)) for folder, job_id in jobs]
        return self._poll(targets, max_age_s)

    def poll_ids(self, jobs: Sequence[tuple[str, float | None]],
                 max_age_s: float | None = None) -> dict[str, JobStatus]:
        """Jobs without a folder (``sbatch`` in a terminal, other tools), by id and the
        submit time squeue reported, decided as folders' jobs are with nothing to prove
        an end: absent from two queue views and unknown to accounting, ENDED."""
        keys = {job_id: f"id:{self.queue.cluster}:{job_id}" for job_id, _ in jobs}
        with self._lock:
            targets = [(keys[job_id], None, Submission(job_id, "slurm", None, at, at),
                        self._latest.get(keys[job_id]) or JobStatus(job_id, "UNKNOWN",
                                                                    "recorded"))
                       for job_id, at in jobs]
        polled = self._poll(targets, max_age_s)
        return {job_id: polled[key] for job_id, key in keys.items()}

    def _poll(self, targets: Sequence[Target], max_age_s: float | None) -> dict[str, JobStatus]:
        """Decide (key, folder or None, submission, last snapshot) targets: one squeue
        and at most one sacct for all."""
        with self._lock:
            result: dict[str, JobStatus] = {}
            slurm = []
            for key, folder, submission, previous in targets:
                if not submission.job_id or previous.definite:
                    result[key] = previous  # not submitted, or settled for good
                elif submission.backend == "local" and folder is not None:
                    result[key] = local_status(folder, submission.job_id)
                else:
                    slurm.append((key, folder, submission, previous))
        as_of = 0.0
        if slurm:
            # not under the lock: the view may wait for a slow squeue, and the widget's
            # monitor thread must not make the kernel's own poll wait twice
            view = self.queue.view(max_age_s)
            # a silent controller's stand-in view says nothing new: its notes are stored
            as_of = view.updated if view.updated is not None and view.error is None else 0.0
            with self._lock:
                result.update(self._poll_slurm(slurm, view, max_age_s))
        with self._lock:
            by_view = {key for key, _, _, _ in slurm}
            for key, folder, _, _ in targets:
                # a poll that overlapped this one (the widget's monitor thread and the
                # kernel's own) stored what a newer view said: never undone by an older
                # one (a FAILED task shown RUNNING again); our own scancel is newer than
                # any view (``_since_cancel`` already set aside the views before it)
                if key in by_view and as_of and result[key].source != "scancel":
                    if self._as_of.get(key, 0.0) > as_of:
                        result[key] = self._latest[key]
                        continue
                    self._as_of[key] = as_of
                self._remember(key, folder, result[key])
            return result

    def _poll_slurm(self, jobs: Sequence[Target], view: QueueView,
                    max_age_s: float | None) -> dict[str, JobStatus]:
        """The queue, then accounting, then the folder (a job without one: ``poll_ids``)."""
        current_cluster = self.queue.cluster
        now = time.time()
        decided: dict[str, JobStatus] = {}
        ask: list[Target] = []
        silent = SCHEDULER_SILENT if view.error is not None else ""
        for key, folder, submission, previous in jobs:
            own = folder is not None and key == status_key(folder, None)
            if not submission.on_this_cluster(current_cluster):
                # this cluster's scheduler knows nothing of it: only the folder can tell
                decided[key] = self._from_folder(
                    key, folder, submission, previous, results_prove=True,
                    note=f"submitted on cluster {submission.cluster}, not {current_cluster}")
                continue
            entries = [e for e in view.find_all(submission.job_id)
                       if submission.matches(e.submit_time, e.name)]
            if entries and view.updated is not None:
                self._absent.pop(key, None)
                state = combined_state([normalize_state(e.state) for e in entries])
                source = "squeue"
                if phase(state) == "pending" and own and folder is not None and \
                        _finished_after(folder, view.updated):
                    state, source = "RUNNING", "results"  # the view predates the run
                # the entry a widget describes: a running one before a pending range
                detail = next((e for e in entries if e.state in RUNNING_STATES), entries[0])
                decided[key] = JobStatus(submission.job_id, state, source, silent, now,
                                         detail=detail, detail_at=view.updated)
                continue
            if view.error is None and (view.updated is None
                                       or view.updated < submission.seen_after) \
                    and not (own and folder is not None and folder.has_results()):
                # squeue works but has not looked since sbatch returned: nothing new to ask
                # (unless the folder's results prove the job ran, and left the queue since)
                decided[key] = replace(previous, checked_at=now)
                continue
            self._missed(key, view)
            ask.append((key, folder, submission, previous))
        if ask:
            records = self.accounting.records([s.job_id for _, _, s, _ in ask],
                                              self._max_age(max_age_s))
            for key, folder, submission, previous in ask:
                previous = replace(previous, detail=None)  # it has left the queue
                if isinstance(records, NotYet):  # asked with the user's next sacct call
                    decided[key] = self._from_folder(key, folder, submission, previous,
                                                     note=previous.note)
                    continue
                decided[key] = self._after_queue(key, folder, submission, previous, records,
                                                 now, silent)
        for key, _, submission, _ in jobs:
            decided[key] = self._since_cancel(submission.job_id, decided[key])
        return decided

    def _missed(self, key: str, view: QueueView) -> None:
        """Note a working queue view that did not list the job ``key``."""
        if view.updated is not None and view.error is None:
            seen = self._absent.setdefault(key, [])
            if view.updated not in seen:
                seen.append(view.updated)

    def _after_queue(self, key: str, folder: JobFolder | None, submission: Submission,
                     previous: JobStatus, records: tuple[AccountingRecord, ...] | None,
                     now: float, silent: str = "") -> JobStatus:
        """The job is not (or not yet) in the queue: accounting, then the folder decide."""
        if records is not None:
            mine = [r for r in self.accounting.records_of(records, submission.job_id)
                    if submission.matches(r.submit_time, r.name)]
            if mine:
                state = combined_state([r.state for r in mine])
                said = JobStatus(submission.job_id, state, "sacct", "", now)
                if said.final:
                    return said
                # accounting still says it runs (it lags, or a stale record): the folder and
                # the queue can still prove the end
                previous = said
        absences = self._absent.get(key, [])
        if records is not None and absences and now - absences[0] < SACCT_LAG_S \
                and not (folder is not None and folder.has_results()):
            return replace(previous, checked_at=now)  # give sacct a moment to catch up
        note = silent or (UNREACHABLE if records is None else "")
        return self._from_folder(key, folder, submission, previous, note=note,
                                 gone=len(absences) >= 2)

    def _from_folder(self, key: str, folder: JobFolder | None, submission: Submission,
                     previous: JobStatus, note: str, gone: bool = False,
                     results_prove: bool = False) -> JobStatus:
        """What the folder proves, when Slurm has nothing (more) to say."""
        now = time.time()
        if previous.final and previous.source == "results":
            return replace(previous, note=note, checked_at=now)  # read it once, not per poll
        # the folder's own job's outcome file, or a sweep task's (read, never unpickled)
        failed: bool | None = None
        if folder is not None and key == status_key(folder, None):
            outcome = folder.outcome()
            failed = None if outcome is None else outcome.failed
        elif folder is not None:
            failed = task_outcome(folder.path, self._meta(folder), submission.job_id)
        # results prove the end once the queue no longer lists the job (it may be tidying up)
        if failed is not None and (gone or results_prove or self._absent.get(key)):
            return JobStatus(submission.job_id, "FAILED" if failed else "COMPLETED",
                             "results", note, now)
        if gone:
            return JobStatus(submission.job_id, "ENDED", "queue", note, now)
        # nothing definite: the last state stands (RUNNING stays RUNNING), with the note
        return replace(previous, job_id=submission.job_id, state=previous.state or "UNKNOWN",
                       note=note, checked_at=now)

    # ------------------------------------------------------------------ usage
    def usage(self, jobs: Sequence[tuple[JobFolder, str | None]],
              max_age_s: float | None = None) -> dict[str, tuple[Usage, ...] | None]:
        """What ended jobs used, keyed like ``poll_jobs``: the folder's ``usage.json``, else
        the user's shared sacct call. Missing key: not ended, or the figures are not final
        yet; ``None``: accounting is unreachable."""
        result: dict[str, tuple[Usage, ...] | None] = {}
        ask: list[tuple[str, JobFolder, Submission]] = []
        for folder, job_id in jobs:
            key = status_key(folder, job_id)
            stored = stored_usage(folder.path, job_id)
            if stored is not None:
                result[key] = stored
                continue
            submission = Submission.of(folder, job_id=job_id)
            if submission.backend == "slurm" and submission.job_id and \
                    self.latest(folder, job_id).final:
                ask.append((key, folder, submission))
        if not ask:
            return result
        shared = self.accounting
        found = shared.answers([s.job_id for _, _, s in ask], self._max_age(max_age_s))
        for key, folder, submission in ask:
            base = base_of(submission.job_id)
            if base not in found:
                continue
            records = found[base]
            if records is None:
                result[key] = None
                continue
            mine = tuple(r.usage for r in records if r.usage is not None
                         and same_job(submission.job_id, r.job_id)
                         and submission.matches(r.submit_time, r.name))
            if not mine or not shared.settled(base):
                continue  # the steps' figures come a moment after the job's end
            result[key] = mine
            if key == status_key(folder, None):
                store_usage(folder.path, mine)
        return result

    def _max_age(self, max_age_s: float | None) -> float:
        return self.queue.interval_s if max_age_s is None else max_age_s

    def _remember(self, key: str, folder: JobFolder | None, status: JobStatus) -> None:
        """Keep the snapshot; write meta.json when what it says (of the folder's job) changed."""
        before = self._latest.get(key)
        self._latest[key] = status
        if status.final and status.source != "recorded":
            self._absent.pop(key, None)
        said = (status.state, status.source, status.note)
        if folder is None or (before is not None
                              and (before.state, before.source, before.note) == said):
            return
        meta = self._meta(folder)
        if status.job_id != str(meta.get("job_id", "")):
            return  # an array task's state: the folder records its job's own
        if (meta.get("state"), meta.get("state_source"), meta.get("state_note", "")) != said \
                and status.source != "recorded":
            folder.update_meta(state=status.state, state_source=status.source,
                               state_note=status.note)
            if self._metas is not None:
                self._metas.pop(folder.path, None)

    def prefetch_accounting(self, job_ids: Sequence[str],
                            max_age_s: float | None = None) -> None:
        """Ask ``sacct`` about all these jobs in one call now, for the polls that follow."""
        if job_ids:
            with self._lock:
                self.accounting.records(list(job_ids), self._max_age(max_age_s))

    # ------------------------------------------------------------------ control
    def cancel(self, job_id: str, listed: bool = True) -> None:
        """``JobQueue.cancel``, remembered: until Slurm answers after the scancel, the job
        shows as cancel sent (the rule: module doc)."""
        at = self.queue.cancel(job_id, listed)
        with self._lock:
            self._cancelled_at[job_id] = max(at, self._cancelled_at.get(job_id, 0.0))

    def _since_cancel(self, job_id: str, status: JobStatus) -> JobStatus:
        """``status``, unless it predates our scancel of the job (the rule: module doc)."""
        at = max((t for cancelled, t in self._cancelled_at.items() if same_job(cancelled, job_id)),
                 default=None)
        if at is None:
            return status
        if status.final:
            self._cancelled_at.pop(job_id, None)
            return status
        if status.source == "squeue" and status.detail_at >= at:
            return status  # Slurm's own answer, asked after the cancel
        state = "COMPLETING" if status.phase == "running" else status.state
        return replace(status, state=state, source="scancel", note=CANCEL_SENT)


def _finished_after(folder: JobFolder, moment: float) -> bool:
    """The cell's results were written after ``moment`` (a queue view's time): a view
    that still listed the job as pending then says nothing of now."""
    try:
        return (folder.path / OUTCOME_FILE).stat().st_mtime > moment
    except OSError:
        return False


_WATCHER: Watcher | None = None
_WATCHER_LOCK = threading.Lock()


def watcher() -> Watcher:
    """This process's watcher, shared by handles, widgets and magics."""
    global _WATCHER
    with _WATCHER_LOCK:
        if _WATCHER is None:
            _WATCHER = Watcher()
        return _WATCHER


def poll_targets(handle: Any) -> list[tuple[Any, str | None]]:
    """(folder, job id or None) pairs to poll for ``handle``: every task of a sweep (its
    latest attempt; a sweep's folder has no state of its own), else the job itself."""
    targets = getattr(handle, "poll_targets", None)
    return list(targets()) if callable(targets) else [(handle.folder, handle._task)]


def usage_of(handles: Sequence[Any], max_age_s: float | None = None
             ) -> dict[int, tuple[Usage, ...] | None]:
    """Position in ``handles`` → its figures from one shared sacct call (each record once:
    tasks that never started share one, ``123_[2-3]``), for the handles whose every target
    has final figures; ``None``: accounting unreachable."""
    targets = [poll_targets(handle) for handle in handles]
    found = watcher().usage([t for some in targets for t in some], max_age_s)
    result: dict[int, tuple[Usage, ...] | None] = {}
    for position, some in enumerate(targets):
        keys = [status_key(folder, job_id) for folder, job_id in some]
        if any(key in found and found[key] is None for key in keys):
            result[position] = None
        elif keys and all(key in found for key in keys):
            figures = {u.job_id: u for key in keys for u in found[key] or ()}
            result[position] = tuple(figures.values())
    return result
