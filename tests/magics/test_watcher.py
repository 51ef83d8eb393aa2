"""The job-state watcher on the real test cluster: sacct outages, arrays, reused ids, late files.

Jobs are real (sbatch through ``commands.run``, or ``%%sbatch``); the only fake is a
``sacct`` that fails, since a shared real cluster cannot lose its accounting on demand.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.attach import attach
from hpc_magics.backends.submitit_backend import SlurmBackend
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import commands, job_status
from hpc_magics.scheduler.cluster import cluster_name
from hpc_magics.scheduler.job_status import UNREACHABLE, JobStatus
from hpc_magics.scheduler.queue import JobQueue
from hpc_magics.scheduler.watcher import Watcher

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def private_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A queue cache of this test's own: other tests and engineers keep theirs."""
    runtime = tmp_path / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    return runtime


class FailingSacct:
    """A ``sacct`` first on PATH that fails, as when slurmdbd is down.

    A fake on purpose: the shared test cluster cannot lose its accounting on demand. It
    fails only when called by this test process (its parent): the jobs' own commands,
    which inherit PATH, and everyone else get the real sacct. ``remove()`` brings
    accounting back.
    """

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        real = shutil.which("sacct")
        assert real, "sacct is not installed"
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "sacct"
        self.script.write_text(
            "#!/bin/sh\n"
            f'if [ "$PPID" = "{os.getpid()}" ]; then\n'
            "  echo 'sacct: error: Problem talking to the database: Connection refused' >&2\n"
            "  exit 1\n"
            "fi\n"
            f'exec {real} "$@"\n')
        self.script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def remove(self) -> None:
        self.script.unlink()


@pytest.fixture
def failing_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  private_runtime: Path) -> FailingSacct:
    return FailingSacct(tmp_path / "shims", monkeypatch)


class Submitter:
    """``submitted(*sbatch_args, wrap=CMD)``: a real job's id, its sbatch call's window
    kept for the job folders the test builds (``window(job_id)``)."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.windows: dict[str, tuple[float, float]] = {}

    def __call__(self, *args: str, wrap: str) -> str:
        started = time.time()
        answer = commands.run(["sbatch", "--parsable", "-p", "debug", "-t", "3",
                               "-o", str(self.output / "slurm-%A_%a.out"), *args,
                               "--wrap", wrap], timeout=30)
        assert answer.ok, answer.stderr
        job_id = answer.stdout.strip().split(";")[0]
        self.windows[job_id] = (started, time.time())
        return job_id


@pytest.fixture
def submitted(tmp_path: Path, slurm_cluster: Any) -> Iterator[Submitter]:
    """Real jobs, cancelled at the end (only ours, by id)."""
    submitter = Submitter(tmp_path)
    yield submitter
    for job_id in submitter.windows:
        commands.run(["scancel", job_id], timeout=30)


def job_folder(root: Path, job_id: str, window: tuple[float, float], *,
               cluster: str | None = None) -> JobFolder:
    """A job folder as %%sbatch leaves it, for a job whose sbatch ran within ``window``."""
    folder = JobFolder.create(root, f"job-{job_id}")
    folder.write_meta({"name": f"job-{job_id}", "backend": "slurm", "state": "SUBMITTED",
                       "job_id": job_id, "submitted_at": window[0],
                       "submit_returned_at": window[1], "cluster": cluster or cluster_name()})
    return folder


def poll_until(watcher: Watcher, folder: JobFolder, done: Callable[[JobStatus], bool],
               timeout: float = 60.0) -> JobStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = watcher.poll([folder], max_age_s=0.5)[folder.path]
        if done(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.7)


def test_sacct_outage_never_ends_or_fails_a_job_and_accounting_corrects_it(
        tmp_path: Path, failing_sacct: FailingSacct, submitted: Submitter) -> None:
    watcher = Watcher(JobQueue())
    job_id = submitted(wrap="sleep 6")
    folder = job_folder(tmp_path / "jobs", job_id, submitted.windows[job_id])
    running = poll_until(watcher, folder, lambda s: s.state == "RUNNING")
    assert running.state == "RUNNING" and running.source == "squeue"
    # It leaves the queue while accounting is unreachable: never FAILED, never a guess
    seen: list[JobStatus] = []
    gone = poll_until(watcher, folder, lambda s: seen.append(s) or s.final, timeout=60)
    assert all(s.state in {"RUNNING", "PENDING", "UNKNOWN", "ENDED"} for s in seen), seen
    assert not any(s.phase == "failed" for s in seen)
    assert gone.state == "ENDED" and gone.note == UNREACHABLE and not gone.definite
    assert folder.meta()["state"] == "ENDED"
    # Accounting answers again: the written ENDED is corrected, for good
    failing_sacct.remove()
    fixed = poll_until(watcher, folder, lambda s: s.definite, timeout=30)
    assert fixed.state == "COMPLETED" and fixed.source == "sacct" and fixed.note == ""
    assert folder.meta()["state"] == "COMPLETED"
    assert Watcher(JobQueue()).latest(folder).definite  # a new process does not ask again


def test_a_running_cell_stays_running_while_accounting_is_down(
        slurm_cluster: Any, shell: Any, failing_sacct: FailingSacct,
        capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "", "import time\ntime.sleep(8)\nanswer = 42")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    states = []
    deadline = time.monotonic() + 90
    while not handle.status.final and time.monotonic() < deadline:
        states.append(handle.refresh(max_age_s=0.5))
        time.sleep(0.7)
    assert "RUNNING" in states and not any(s in {"FAILED", "ENDED"} for s in states), states
    assert handle.wait(timeout=30) == "COMPLETED"  # its result file proves it
    handle.fetch(shell.user_ns, show=False)
    assert shell.user_ns["answer"] == 42
    capsys.readouterr()
    shell.run_line_magic("hpc_jobs", "")
    assert f"{handle.job_id}  COMPLETED" in capsys.readouterr().out


def test_array_job_and_its_tasks_show_their_real_states(
        tmp_path: Path, submitted: Submitter, private_runtime: Path,
        sacct_state: Any) -> None:
    job_id = submitted("--array=1-3", wrap='case "$SLURM_ARRAY_TASK_ID" in 1) true;; '
                                            "2) exit 3;; *) sleep 300;; esac")
    root = tmp_path / "jobs"
    window = submitted.windows[job_id]
    folders = {key: job_folder(root, key, window) for key in
               (job_id, f"{job_id}_1", f"{job_id}_2", f"{job_id}_3", f"{job_id}_[2-3]")}
    sacct_state(f"{job_id}_2", until={"FAILED"}, timeout=30)
    sacct_state(f"{job_id}_3", until={"RUNNING"}, timeout=30)
    watcher = Watcher(JobQueue())
    wanted = {f"{job_id}_1": "COMPLETED", f"{job_id}_2": "FAILED", f"{job_id}_3": "RUNNING",
              job_id: "RUNNING", f"{job_id}_[2-3]": "RUNNING"}
    deadline = time.monotonic() + 30
    while True:
        polled = watcher.poll(folders.values(), max_age_s=0.5)
        states = {key: polled[folder.path].state for key, folder in folders.items()}
        if states == wanted or time.monotonic() > deadline:
            break
        time.sleep(0.7)
    assert states == wanted
    assert polled[folders[f"{job_id}_2"].path].definite  # sacct's FAILED, not a guess
    # cancel one task by its array id, then the parent is over
    SlurmBackend().cancel(f"{job_id}_3", folders[f"{job_id}_3"])
    assert sacct_state(f"{job_id}_3", until={"CANCELLED"}) == "CANCELLED"
    parent = poll_until(watcher, folders[job_id], lambda s: s.definite, timeout=30)
    assert parent.state == "FAILED"  # one task failed, one was cancelled
    # attach (and %hpc_fetch) by task id finds the task's folder
    assert attach(f"{job_id}_2", root).folder == folders[f"{job_id}_2"]
    # with only the array's folder, a task is found through it and keeps its own state
    only_parent = tmp_path / "array only"
    parent_folder = job_folder(only_parent, job_id, window)
    task = attach(f"{job_id}_1", only_parent)
    assert task.job_id == f"{job_id}_1" and task.folder == parent_folder
    assert task.state == "COMPLETED"
    assert parent_folder.meta()["state"] == "SUBMITTED"  # a task never writes its job's state
    assert attach(job_id, only_parent).state == "FAILED"
    assert parent_folder.meta()["state"] == "FAILED"


def test_a_reused_job_id_is_never_taken_for_the_old_job(
        tmp_path: Path, slurm_cluster: Any, shell: Any, private_runtime: Path) -> None:
    """A reset restarts ids at 1; resetting the shared cluster is forbidden, so an old
    folder claims the id of a live job, as it would after a reset."""
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "", "import time\ntime.sleep(120)")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    new = magics.handles[magics.last_job]
    long_ago = time.time() - 30 * 86400
    old = job_folder(Path(magics.jobs_root), new.job_id, (long_ago, long_ago + 1))
    try:
        assert poll_until(Watcher(JobQueue()), new.folder,
                          lambda s: s.state == "RUNNING").state == "RUNNING"
        watcher = Watcher(JobQueue())
        seen = []
        status = poll_until(watcher, old, lambda s: seen.append(s.state) or s.final)
        assert "RUNNING" not in seen and "PENDING" not in seen, seen
        assert status.state == "ENDED"  # not in the queue, unknown to accounting: over
        assert watcher.poll([new.folder])[new.folder.path].state == "RUNNING"
        # the same id and submit time, but recorded on another cluster: not this job either
        meta = new.folder.meta()
        foreign = job_folder(tmp_path / "elsewhere", new.job_id,
                             (meta["submitted_at"], meta["submit_returned_at"]),
                             cluster="elsewhere")
        status = watcher.poll([foreign])[foreign.path]
        assert status.state == "SUBMITTED" and "cluster elsewhere" in status.note
        # the old folder was written last (newest mtime); attach still picks the live job
        assert attach(new.job_id, Path(magics.jobs_root)).folder == new.folder
        magics.handles.clear()
        shell.run_line_magic("hpc_cancel", new.job_id)
        assert new.wait(timeout=60) == "CANCELLED"
    finally:
        commands.run(["scancel", new.job_id], timeout=30)


def test_a_result_file_shown_late_is_waited_for(
        slurm_cluster: Any, shell: Any, private_runtime: Path, sacct_state: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "", "value = 6 * 7")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert sacct_state(handle.job_id, until={"COMPLETED"}, timeout=60) == "COMPLETED"
    results = handle.folder.results_path
    deadline = time.monotonic() + 30
    while not results.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    hidden = results.with_name("results.pkl.late")
    results.rename(hidden)  # as a network file system that has not shown it yet

    def appear() -> None:
        time.sleep(5)
        hidden.rename(results)

    # Slurm's word decides the job is over (squeue may still list it COMPLETING a moment)
    assert handle.wait(timeout=60) == "COMPLETED" and handle.status.source == "sacct"
    writer = threading.Thread(target=appear)
    writer.start()
    started = time.monotonic()
    capsys.readouterr()
    values = handle.fetch(shell.user_ns)
    writer.join()
    assert values["value"] == 42 and shell.user_ns["value"] == 42
    assert time.monotonic() - started >= 4
    assert "waiting up to 30s for its results" in capsys.readouterr().out


@pytest.mark.slow
def test_a_job_slurm_requeues_stays_the_folders_job(
        slurm_cluster: Any, shell: Any, private_runtime: Path, sacct_state: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job asked with ``--requeue`` that Slurm puts back in the queue (here ``scontrol
    requeue``, as a node failure or a preemption does) comes back with a new submit time;
    it is still the folder's job: never ENDED while it waits and runs again, and its results
    arrive from the second run."""
    # one host, one clock: a slack of a few seconds is the minute a site needs, sooner
    monkeypatch.setattr(job_status, "CLOCK_SLACK_S", 5.0)
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "", "#SBATCH --requeue\nimport os, time\n"
                                       "runs = os.environ.get('SLURM_RESTART_COUNT', '0')\n"
                                       "time.sleep(120 if runs == '0' else 2)")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    watcher = Watcher(JobQueue(interval_s=1))
    try:
        assert poll_until(watcher, handle.folder, lambda s: s.state == "RUNNING").state == \
            "RUNNING"
        # later than the clock slack the submit time is read with, so only the name and
        # the folder's log tell that the new entry is this job
        time.sleep(job_status.CLOCK_SLACK_S + 3)
        requeued = commands.run(["scontrol", "requeue", handle.job_id], timeout=30)
        assert requeued.ok, requeued.first_error_line()
        seen = []
        status = poll_until(watcher, handle.folder,
                            lambda s: seen.append(s.state) or s.definite, timeout=150)
        assert status.state == "COMPLETED" and "ENDED" not in seen, seen
        handle.fetch(shell.user_ns)
        assert shell.user_ns["runs"] == "1"  # the results are the requeued run's
    finally:
        commands.run(["scancel", handle.job_id], timeout=30)
