"""A silent scheduler never holds a caller: with ``answer_within_s`` the view answers
before squeue does (the last jobs, the silence as its error: ordering, not a clock, tells
that it did not wait) while squeue goes on in the background
and its answer lands in the shared cache. The stand-in ``squeue`` hangs or answers slowly
on demand, which the real one does only while slurmctld is away (tests/drills stop it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hpc_magics.scheduler.queue import SCHEDULER_SILENT, UNANSWERED_AFTER_S, JobQueue

from .test_queue import FakeSqueue

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def fake_squeue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSqueue:
    return FakeSqueue(tmp_path / "bin", monkeypatch)


def test_a_hanging_squeue_answers_within_the_bound(fake_squeue: FakeSqueue,
                                                   tmp_path: Path) -> None:
    queue = JobQueue(user="gus", cache_dir=tmp_path / "runtime", interval_s=1, timeout_s=3,
                     answer_within_s=0.3)
    good = queue.view()
    assert good.error is None and good.jobs
    fake_squeue.behave("hang")
    silent = queue.view(max_age_s=0)
    # answered before squeue did: its answer, or its time-out, would be the error instead
    assert silent.error == SCHEDULER_SILENT and silent.jobs == good.jobs
    # the squeue in flight ends (time-out), its failure is shared: no second one meanwhile
    time.sleep(3.5)
    calls = fake_squeue.calls
    failed = queue.view()
    assert failed.error is not None and "did not answer within 3s" in failed.error
    assert failed.jobs == good.jobs and fake_squeue.calls == calls


def test_a_slow_answer_arrives_for_the_next_caller(fake_squeue: FakeSqueue,
                                                   tmp_path: Path) -> None:
    fake_squeue.behave("ok", delay_s=1.0)
    queue = JobQueue(user="hal", cache_dir=tmp_path / "runtime", interval_s=30,
                     answer_within_s=0.3)
    first = queue.view()
    assert first.error == SCHEDULER_SILENT  # before squeue's answer came
    time.sleep(1.2)
    later = JobQueue(user="hal", cache_dir=tmp_path / "runtime", interval_s=30).view()
    assert later.error is None and [j.job_id for j in later.jobs] == ["501"]
    assert fake_squeue.calls == 1


def test_a_users_own_look_goes_past_the_back_off(fake_squeue: FakeSqueue,
                                                 tmp_path: Path) -> None:
    """A submission after an outage asks again at once (the back-off would serve the old
    failure for minutes), and never waits behind a refresh still hanging."""
    queue = JobQueue(user="ida", cache_dir=tmp_path / "runtime", interval_s=30,
                     answer_within_s=0.3)
    fake_squeue.behave("fail")
    assert queue.view(max_age_s=0).error is not None
    calls = fake_squeue.calls
    assert queue.view(max_age_s=0).error is not None and fake_squeue.calls == calls  # backing off
    failed = queue.peek()  # what a submission reads (last_error) without building the jobs
    assert failed is not None and queue.last_error() == failed.error is not None
    fake_squeue.behave("ok")
    back = queue.look_now()
    assert back.error is None and [j.job_id for j in back.jobs] == ["501"]
    assert fake_squeue.calls == calls + 1
    assert queue.peek() == back  # shared: the kernel's handles see it too
    assert queue.last_error() is None
    # a refresh hanging with the lock held: the user's look still answers in time, saying so
    fake_squeue.behave("hang")
    queue.invalidate()
    assert queue.view(max_age_s=0).error == SCHEDULER_SILENT  # hangs on in the background
    silent = queue.look_now()
    assert silent.error == SCHEDULER_SILENT  # did not wait for the hanging one, nor its lock


def test_a_submission_reads_the_last_error_without_the_users_jobs(tmp_path: Path) -> None:
    """Every submission asks whether the last look failed: only the cache's fields before
    its jobs are read, however long the user's queue (here the jobs part is cut off, as no
    whole-file parse would take it)."""
    from hpc_magics.core.jobs import JobSnapshot
    from hpc_magics.scheduler.queue import QueueView, _view_to_json

    queue = JobQueue(user="joe", cluster="lab", cache_dir=tmp_path / "runtime")
    many = tuple(JobSnapshot(str(number), "PENDING", name=f"job-{number}")
                 for number in range(5000))
    text = _view_to_json(QueueView(jobs=many, updated=1.0, error="squeue: timed out"))
    queue.cache_path.parent.mkdir(mode=0o700)
    queue.cache_path.write_text(text[:len(text) // 2])
    assert queue.last_error() == "squeue: timed out"
    queue.cache_path.write_text(_view_to_json(QueueView(jobs=many, updated=2.0)))
    assert queue.last_error() is None


def test_a_look_gone_unanswered_is_a_last_error_before_squeue_gives_up(
        fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    """A submission asks ``last_error()`` only (no squeue): while the controller is away
    squeue hangs for its whole time-out before it fails, and a submission in that window
    went on to sbatch, which retried for a minute and submitted the cell after the outage."""
    watcher = JobQueue(user="jo", cache_dir=tmp_path / "runtime", interval_s=1, timeout_s=9,
                       answer_within_s=0.3)
    kernel = JobQueue(user="jo", cache_dir=tmp_path / "runtime", answer_within_s=0.3)
    assert watcher.view().error is None and kernel.last_error() is None
    fake_squeue.behave("hang")
    calls = fake_squeue.calls
    assert watcher.view(max_age_s=0).error == SCHEDULER_SILENT  # hangs on in the background
    deadline = time.monotonic() + 10
    while fake_squeue.calls == calls and time.monotonic() < deadline:
        time.sleep(0.05)  # the hanging squeue has begun: its look is on record before it
    time.sleep(UNANSWERED_AFTER_S + 0.5)  # past the bound since then
    assert kernel.last_error() == SCHEDULER_SILENT
    deadline = time.monotonic() + 30
    while kernel.last_error() == SCHEDULER_SILENT and time.monotonic() < deadline:
        time.sleep(0.2)  # until squeue's own time-out (9 s): its failure replaces the silence
    error = kernel.last_error()
    assert error is not None and "did not answer within 9s" in error
