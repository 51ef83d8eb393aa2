"""The watcher's side of the user's shared ``sacct`` (``SharedAccounting``): answers waited
for within a bound, records found per job, and what ended jobs used."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from ..core.efficiency import Usage
from ..core.errors import report_bug
from ..core.jobids import JobIndex, same_job
from ..jobfolder.files import store_usage, stored_usage
from ..jobfolder.folder import JobFolder
from .accounting import AccountingRecord, SharedAccounting, base_of
from .job_status import NOT_YET, JobStatus, NotYet, Submission, record_name, status_key
from .queue import ANSWER_WITHIN_S

Answers = dict[str, tuple[AccountingRecord, ...] | None]


class SacctAnswers:
    def __init__(self, shared: Callable[[], SharedAccounting]) -> None:
        self._shared = shared
        self._asking: threading.Thread | None = None  # a slow sacct, still asking
        self._index: tuple[tuple[AccountingRecord, ...],
                           JobIndex[AccountingRecord]] | None = None

    def records(self, job_ids: list[str], max_age: float
                ) -> tuple[AccountingRecord, ...] | NotYet | None:
        """The records of ``job_ids``, per base id, once each (a sweep's thousand tasks
        share one base). ``None``: unreachable; ``NOT_YET``: asked next interval."""
        found = self.answers_within(job_ids, max_age)
        if found is None:
            return None  # accounting lags (slurmdbd slow or down): unreachable for now
        answers = [found.get(base, NOT_YET) for base in dict.fromkeys(map(base_of, job_ids))]
        if any(a is None for a in answers):
            return None
        if any(isinstance(a, NotYet) for a in answers):
            return NOT_YET
        return tuple(r for a in answers if isinstance(a, tuple) for r in a)

    def records_of(self, records: tuple[AccountingRecord, ...],
                   job_id: str) -> list[AccountingRecord]:
        """The records of ``job_id`` (an index kept per answer: a sweep's tasks)."""
        if self._index is None or self._index[0] is not records:
            self._index = (records, JobIndex(records, lambda r: r.job_id))
        return self._index[1].find(job_id)

    def answers_within(self, job_ids: list[str], max_age: float) -> Answers | None:
        """The shared answers, waited for at most ``ANSWER_WITHIN_S``: a slow sacct (a lagging
        slurmdbd) is unreachable meanwhile; its answer lands in the shared cache when it
        comes. One sacct at a time from this process."""
        found: Answers = {}
        failed: list[BaseException] = []

        def ask() -> None:  # not under the lock: the caller holds it while it waits
            try:
                found.update(self._shared().answers(job_ids, max_age))
            except Exception as error:  # sacct's failures are None answers: this is a bug
                failed.append(error)

        deadline = time.monotonic() + ANSWER_WITHIN_S  # one budget for both waits below
        in_flight = self._asking
        if in_flight is not None and in_flight.is_alive():
            in_flight.join(ANSWER_WITHIN_S)  # its answer may be the one we need
            if in_flight.is_alive():
                return None
        asking = threading.Thread(target=ask, name="hpc-magics-sacct", daemon=True)
        self._asking = asking
        asking.start()
        asking.join(max(0.0, deadline - time.monotonic()))
        if failed:
            raise report_bug("reading sacct's answer", failed[0])
        return None if asking.is_alive() else dict(found)

    def usage(self, jobs: Sequence[tuple[JobFolder, str | None]],
              latest: Callable[[JobFolder, str | None], JobStatus],
              max_age: float) -> dict[str, tuple[Usage, ...] | None]:
        """What ended jobs used (one ``Usage`` per job, or per array task), keyed like the
        watcher's ``poll_jobs``; ``latest``: the watcher's snapshot of a job. From the
        folder's ``usage.json`` once known for good, else from the user's shared sacct
        call. Missing key: not ended, or accounting's figures are not final yet; ``None``:
        accounting is unreachable."""
        result: dict[str, tuple[Usage, ...] | None] = {}
        ask: list[tuple[str, JobFolder, Submission]] = []
        for folder, job_id in jobs:
            key = status_key(folder, job_id)
            stored = stored_usage(folder.path, job_id)
            if stored is not None:
                result[key] = stored
                continue
            submission = Submission.of(folder, job_id=job_id)
            status = latest(folder, job_id)
            if submission.backend == "slurm" and submission.job_id and status.final:
                ask.append((key, folder, submission))
        if not ask:
            return result
        shared = self._shared()
        found = shared.answers([s.job_id for _, _, s in ask], max_age)
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
                         and submission.matches(r.submit_time, record_name(r)))
            if not mine or not shared.settled(base):
                continue  # the steps' figures come a moment after the job's end
            result[key] = mine
            if key == status_key(folder, None):
                store_usage(folder.path, mine)
        return result
