"""The cached per-user job view: one squeue per interval across threads and processes.

These tests put a stand-in ``squeue`` first on PATH (a shell script that logs each call,
then prints fixed lines, fails, or hangs) so that sharing, back-off and time-outs can be
counted exactly; the real squeue against the test cluster is exercised in
test_server_in_job.py.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.scheduler.queue import JobQueue

pytestmark = pytest.mark.timeout(120)

LINE = "501|RUNNING|debug|1|0:05|20:00|N/A|None|N/A|2026-11-22T14:10:01|shimmed job"


class FakeSqueue:
    """A ``squeue`` on PATH whose behaviour the test sets, and which counts its calls."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.calls_log = folder / "calls.log"
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
        self.behave("ok")

    def behave(self, mode: str, delay_s: float = 0.0, extra_line: str = "") -> None:
        body = {
            "ok": f"echo '{LINE}'" + (f"; echo '{extra_line}'" if extra_line else ""),
            "fail": "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1",
            "hang": "exec sleep 30",
        }[mode]
        script = self.folder / "squeue"
        script.write_text(f"#!/bin/sh\necho \"$*\" >> {self.calls_log}\nsleep {delay_s}\n"
                          f"{body}\n")
        script.chmod(0o755)

    @property
    def calls(self) -> int:
        return len(self.calls_log.read_text().splitlines()) if self.calls_log.exists() else 0


@pytest.fixture
def fake_squeue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSqueue:
    return FakeSqueue(tmp_path / "bin", monkeypatch)


def test_view_parses_and_caches(fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    queue = JobQueue(user="alice", cache_dir=tmp_path / "runtime", interval_s=30)
    view = queue.view()
    assert [j.job_id for j in view.jobs] == ["501"] and view.jobs[0].name == "shimmed job"
    assert view.error is None and view.updated is not None
    assert "-u alice" in fake_squeue.calls_log.read_text()
    assert queue.view() == view
    assert JobQueue(user="alice", cache_dir=tmp_path / "runtime", interval_s=30).view() == view
    assert fake_squeue.calls == 1
    assert queue.view(max_age_s=0).updated != view.updated
    assert fake_squeue.calls == 2
    # one cache per user AND cluster: a home shared by two clusters keeps two views
    assert (tmp_path / "runtime" / f"hpc_magics-squeue-alice-{queue.cluster}.json").exists()
    other = JobQueue(user="alice", cluster="other-cluster", cache_dir=tmp_path / "runtime")
    assert other.cache_path != queue.cache_path and "other-cluster" in other.cache_path.name


def test_jobs_over_are_kept_apart_from_the_live_ones(fake_squeue: FakeSqueue,
                                                     tmp_path: Path) -> None:
    """squeue -t all: a job that ended since the last look (still in the controller's
    memory) is how the server learns of one no view listed live; never a live job."""
    ended = LINE.replace("501|RUNNING", "502|COMPLETED").replace("shimmed job", "quick one")
    fake_squeue.behave("ok", extra_line=ended)
    view = JobQueue(user="al", cache_dir=tmp_path / "runtime", interval_s=30).view()
    assert "-t all -u al" in fake_squeue.calls_log.read_text()
    assert [j.job_id for j in view.jobs] == ["501"] and view.find("502") is None
    assert [(j.job_id, j.state, j.name) for j in view.ended] == [("502", "COMPLETED",
                                                                  "quick one")]
    # the shared cache keeps them apart too
    assert JobQueue(user="al", cache_dir=tmp_path / "runtime", interval_s=30).view() == view


def test_concurrent_threads_share_one_squeue(fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    fake_squeue.behave("ok", delay_s=0.5)
    queue = JobQueue(user="bob", cache_dir=tmp_path / "runtime", interval_s=30)
    others = [JobQueue(user="bob", cache_dir=tmp_path / "runtime", interval_s=30)
              for _ in range(3)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        views = list(pool.map(lambda i: (queue if i % 4 == 0 else others[i % 3]).view(),
                              range(12)))
    assert fake_squeue.calls == 1
    assert len({v.updated for v in views}) == 1


def test_concurrent_processes_share_one_squeue(fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    fake_squeue.behave("ok", delay_s=0.5)
    code = ("import sys; from pathlib import Path; from hpc_magics.scheduler.queue import JobQueue;"
            "print(JobQueue(user='carol', cache_dir=Path(sys.argv[1]), interval_s=30)"
            ".view().updated)")
    processes = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "runtime")],
                                  stdout=subprocess.PIPE, text=True) for _ in range(5)]
    answers = {p.communicate(timeout=60)[0].strip() for p in processes}
    assert fake_squeue.calls == 1
    assert len(answers) == 1 and "None" not in answers


def test_failures_back_off_and_keep_the_last_good_jobs(fake_squeue: FakeSqueue,
                                                      tmp_path: Path) -> None:
    queue = JobQueue(user="dave", cache_dir=tmp_path / "runtime", interval_s=1)
    good = queue.view()
    fake_squeue.behave("fail")
    time.sleep(1.1)
    before = time.time()  # the back-off counts from squeue's answer, inside view()
    failed = queue.view()
    after = time.time()
    assert failed.jobs == good.jobs and failed.updated == good.updated
    assert failed.error == ("squeue failed: slurm_load_jobs error: "
                            "Unable to contact slurm controller")
    assert failed.failures == 1
    assert before + 1.6 <= failed.retry_at <= after + 2.4  # 1 s x 2^1, jitter +-20 %
    calls = fake_squeue.calls
    for _ in range(5):
        assert queue.view().error == failed.error
    assert fake_squeue.calls == calls  # backing off: no squeue
    time.sleep(failed.retry_at - time.time() + 0.05)
    before = time.time()
    second = queue.view()
    after = time.time()
    assert second.failures == 2 and fake_squeue.calls == calls + 1
    assert before + 3.2 <= second.retry_at <= after + 4.8
    fake_squeue.behave("ok")
    time.sleep(second.retry_at - time.time() + 0.05)
    recovered = queue.view()
    assert recovered.error is None and recovered.failures == 0 and recovered.jobs == good.jobs


def test_a_hanging_squeue_times_out(fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    fake_squeue.behave("hang")
    queue = JobQueue(user="erin", cache_dir=tmp_path / "runtime", interval_s=5, timeout_s=1)
    started = time.monotonic()
    view = queue.view()
    assert time.monotonic() - started < 5
    assert view.error is not None and "did not answer within 1s" in view.error
    assert view.jobs == ()


def test_cancel_refuses_jobs_not_in_the_users_queue(fake_squeue: FakeSqueue,
                                                    tmp_path: Path) -> None:
    queue = JobQueue(user="fay", cache_dir=tmp_path / "runtime", interval_s=30)
    with pytest.raises(LookupError, match="job 999 is not one of fay's jobs"):
        queue.cancel("999")
    assert fake_squeue.calls == 2  # the cached view, then one fresh look before refusing


def test_cancel_waits_for_a_slow_squeue_rather_than_calling_it_silent(
        fake_squeue: FakeSqueue, tmp_path: Path) -> None:
    """A server's queue serves a view within ``answer_within_s``; a cancel (the user's own
    ask, run off the event loop) waits for the fresh look's answer instead: a squeue slower
    than that under load is no "scheduler not answering" (seen in a clean-clone run: a
    server refused with 502 where the job was simply not the user's)."""
    queue = JobQueue(user="gus", cache_dir=tmp_path / "runtime", interval_s=30,
                     answer_within_s=1.0)
    assert queue.view(max_age_s=0).error is None  # a fresh view, as a polling server has
    fake_squeue.behave("ok", delay_s=3.0)  # then squeue slows down
    with pytest.raises(LookupError, match="job 999 is not one of gus's jobs"):
        queue.cancel("999")


def test_cancel_without_slurm_says_so_and_no_try_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No squeue on PATH is a definite answer (no Slurm here), not a scheduler that is
    not answering: a "try again in a minute" would send the user waiting for nothing."""
    monkeypatch.setenv("PATH", str(tmp_path))  # a laptop: no Slurm commands
    queue = JobQueue(user="hal", cache_dir=tmp_path / "runtime", interval_s=30)
    with pytest.raises(HpcMagicsError) as refused:
        queue.cancel("999999")
    said = str(refused.value)
    assert "cannot cancel job 999999" in said and "squeue was not found" in said, said
    assert "try again" not in said and "not answering" not in said, said
