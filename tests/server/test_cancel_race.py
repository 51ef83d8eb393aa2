"""After our own scancel, no answer older than the cancel shows the job running again.

Seen on the test cluster under load (test_server_in_job.py's cancel test, ``-n 4``): the
job list right after a cancel still said RUNNING, from what Slurm said before it. These
tests make the two timings behind that happen on demand:

- a squeue begun before the cancel that finishes after it (``look_now``, or another
  process sharing the cache): its answer must not be stored as fresh;
- a squeue too slow to answer after the cancel (and accounting not yet saying
  CANCELLED): the last state standing must not be the RUNNING of before the cancel.

The scheduler here is a FAKE runner on purpose, and only for this timing: a real squeue
cannot be held between its start and its answer, nor made slow, on demand on the shared
cluster. The real cancel is tested in test_server_in_job.py. So is the queue view that two
overlapping polls of one watcher see (``HeldViews``).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from hpc_magics.scheduler.accounting import SharedAccounting
from hpc_magics.scheduler.commands import CommandResult
from hpc_magics.scheduler.queue import JobQueue, QueueView
from hpc_magics.scheduler.slurm_text import parse_squeue, slurm_timestamp
from hpc_magics.scheduler.watcher import CANCEL_SENT, Watcher

pytestmark = pytest.mark.timeout(60)

SUBMITTED = "2026-11-22T14:10:01"
RUNNING = f"501|RUNNING|debug|1|0:05|20:00|N/A|None|N/A|{SUBMITTED}|sleeper"


class FakeScheduler:
    """squeue lists job 501 RUNNING until scancel, nothing after; ``hold()`` makes the
    next squeue take its answer (as the controller saw it) then wait for ``release()``."""

    def __init__(self) -> None:
        self.listed = RUNNING
        self.calls: list[str] = []
        self._holding = False
        self.began = threading.Event()
        self._released = threading.Event()

    def hold(self) -> None:
        self._holding, self.began = True, threading.Event()
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def __call__(self, argv: Sequence[str], timeout: float = 20.0) -> CommandResult:
        self.calls.append(argv[0])
        if argv[0] == "scancel":
            self.listed = ""
            return CommandResult(tuple(argv), 0, "", "")
        if argv[0] == "sacct":  # accounting lags (or is down): nothing final from it
            return CommandResult(tuple(argv), 1, "", "sacct: error: slurmdbd lags")
        answer = self.listed  # what the controller said when squeue began
        if self._holding:
            self._holding = False
            self.began.set()
            assert self._released.wait(30)
        return CommandResult(tuple(argv), 0, answer + "\n" if answer else "", "")


def queue(tmp_path: Path, scheduler: FakeScheduler, **kwargs: float | None) -> JobQueue:
    return JobQueue(user="alice", cluster="test", interval_s=30, cache_dir=tmp_path / "rt",
                    runner=scheduler, **kwargs)  # type: ignore[arg-type]


def test_a_squeue_begun_before_a_cancel_is_not_stored_as_fresh(tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    server = queue(tmp_path, scheduler)
    kernel = queue(tmp_path, scheduler, answer_within_s=None)  # shares the cache file
    assert server.view().find("501") is not None

    scheduler.hold()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        late = pool.submit(kernel.look_now)  # its squeue begins, and is held
        assert scheduler.began.wait(10)
        server.cancel("501")  # scancel, then invalidate, while that squeue is out
        scheduler.release()
        assert late.result(10).find("501") is not None  # it did begin before the cancel

    asked = scheduler.calls.count("squeue")
    after = server.view()
    assert scheduler.calls.count("squeue") == asked + 1, "the old answer was taken as fresh"
    assert after.find("501") is None


def test_a_cancelled_job_never_shows_running_from_before_the_cancel(tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    jobs = queue(tmp_path, scheduler, answer_within_s=0.2)
    watcher = Watcher(jobs, SharedAccounting(user="alice", cluster="test", interval_s=30,
                                             cache_dir=tmp_path / "rt", runner=scheduler))
    submitted = slurm_timestamp(SUBMITTED)
    assert watcher.poll_ids([("501", submitted)])["501"].state == "RUNNING"

    watcher.cancel("501")
    scheduler.hold()  # the squeue after the cancel is slow: the last view is all there is
    try:
        status = watcher.poll_ids([("501", submitted)])["501"]
        assert scheduler.began.is_set()
        assert status.state != "RUNNING", status
        assert (status.state, status.note) == ("COMPLETING", CANCEL_SENT)
    finally:
        scheduler.release()
    held = jobs._asking  # that slow squeue (asked after the cancel) has its answer now
    assert held is not None
    held.join(10)

    # Slurm's own answer, asked after the cancel, speaks again
    scheduler.listed = RUNNING.replace("|RUNNING|", "|CG|")
    status = watcher.poll_ids([("501", submitted)], max_age_s=0)["501"]
    assert (status.state, status.source) == ("COMPLETING", "squeue")


class HeldViews:
    """A stand-in for the user's queue view whose first look is held until ``release()``
    (a slow squeue the widget's monitor thread began) while later looks answer at once
    with what the controller says by then."""

    cluster, interval_s = "test", 30.0

    def __init__(self, older: QueueView, newer: QueueView) -> None:
        self.older, self.newer = older, newer
        self.began, self.released = threading.Event(), threading.Event()

    def view(self, max_age_s: float | None = None) -> QueueView:
        if not self.began.is_set():
            self.began.set()
            assert self.released.wait(30)
            return self.older
        return self.newer


def test_an_older_view_never_undoes_what_a_newer_one_said(tmp_path: Path) -> None:
    """Two polls of one watcher overlap (the job widget's monitor thread, the kernel's own
    wait): the one that looked at the queue first, and decides last, must not store its
    older state over the newer one (a sweep's FAILED task was RUNNING again, and its
    widget made no table)."""
    completing = RUNNING.replace("|RUNNING|", "|COMPLETING|")
    views = HeldViews(QueueView(jobs=parse_squeue(RUNNING), updated=100.0),
                      QueueView(jobs=parse_squeue(completing), updated=200.0))
    watcher = Watcher(views)  # type: ignore[arg-type]
    submitted = slurm_timestamp(SUBMITTED)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        monitor = pool.submit(watcher.poll_ids, [("501", submitted)])
        assert views.began.wait(10)
        assert watcher.poll_ids([("501", submitted)])["501"].state == "COMPLETING"
        views.released.set()
        assert monitor.result(10)["501"].state == "COMPLETING"
    assert watcher.poll_ids([("501", submitted)])["501"].state == "COMPLETING"
