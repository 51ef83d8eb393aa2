"""A jupyter_server started INSIDE a real Slurm job on the test cluster.

Each test sbatches a job whose batch script execs ``jupyter server`` on 127.0.0.1 with a
known port and token (the test nodes run on this host), then talks to it over HTTP.
"""

from __future__ import annotations

import concurrent.futures
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pytest
import requests

from hpc_magics.scheduler import commands
from hpc_magics.scheduler.own_job import own_job
from hpc_magics.scheduler.queue import JobQueue
from hpc_magics.scheduler.slurm_text import slurm_timestamp

from .conftest import (
    HOSTS_APART,
    SERVER_JOB_MINUTES,
    StartInJob,
    execute,
    processes_mentioning,
    sbatch,
    squeue_state,
    wait_running,
)

if TYPE_CHECKING:
    from conftest import SacctState

pytestmark = pytest.mark.timeout(240)
ENDED = {"CANCELLED", "COMPLETED"}


@pytest.fixture
def sleeper_job() -> Iterator[Callable[[Path], str]]:
    """``sleeper_job(folder)``: a second job of the user, which the server must list and must
    not stop; cancelled after the test so it does not hold a CPU of the test cluster."""
    started: list[str] = []

    def submit(folder: Path) -> str:
        job_id = _sleeper_job(folder)
        started.append(job_id)
        return job_id

    yield submit
    for job_id in started:
        commands.run(["scancel", job_id], timeout=30)


def _sleeper_job(folder: Path, minutes: int = 5) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "sleeper.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH --job-name=hpc-magics-test-sleeper\n"
                      f"#SBATCH --time={minutes}\n#SBATCH --output={folder / 'sleeper.log'}\n"
                      "sleep 600\n")
    job_id = sbatch(script)
    wait_running(job_id)
    return job_id


def scheduler_end_time(job_id: str) -> float | None:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%e"], timeout=30)
    return slurm_timestamp(answer.stdout.strip())


def test_server_in_a_job_reports_its_job(server_in_job: StartInJob) -> None:
    server = server_in_job()
    info = server.get("hpc-magics/server").json()
    assert info["in_slurm_job"] is True
    assert info["job_id"] == server.job
    assert info["job_name"] == "hpc-magics-test-server"
    assert info["partition"] == "debug"
    assert info["nodes"] == 1
    # The scheduler's end time, from whichever source this release offers: the job's own
    # SLURM_JOB_END_TIME where Slurm sets it (24.11 and later), else squeue/scontrol (22.05).
    assert info["end_time"] == pytest.approx(scheduler_end_time(server.job), abs=1)
    if server.times_from_slurm is not None:
        assert info["end_time"] == pytest.approx(server.times_from_slurm[1], abs=1)
    assert info["end_time"] - info["start_time"] == pytest.approx(SERVER_JOB_MINUTES * 60, abs=1)
    assert 0 < info["seconds_left"] <= SERVER_JOB_MINUTES * 60
    assert info["seconds_left"] == pytest.approx(info["end_time"] - info["now"], abs=1)
    assert info["node_hours_total"] == pytest.approx(SERVER_JOB_MINUTES / 60, abs=0.001)
    assert 0 <= info["node_hours_used"] < info["node_hours_total"]
    assert info["idle_stop_minutes"] is None


SLOW_SQUEUE_SHIM = """#!/bin/sh
# Stands in for a scheduler slow to answer (a real one cannot be made slow on demand):
# the server's look at its own job waits, then the real squeue answers.
case " $* " in *" -j "*) sleep 3 ;; esac
exec {real} "$@"
"""


def test_a_slow_scheduler_still_names_the_servers_job_at_once(
        server_in_job: StartInJob, tmp_path: Path) -> None:
    """The first answer comes before the scheduler's: what the job's environment says (all
    of it where Slurm gives a job its times, 24.11 and later), marked pending if times are
    missing; a later look has them. The %hpc_server widget shows and re-reads this."""
    real = commands.run(["sh", "-c", "command -v squeue"], timeout=10).stdout.strip()
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    (shim_dir / "squeue").write_text(SLOW_SQUEUE_SHIM.format(real=real))
    (shim_dir / "squeue").chmod(0o755)
    server = server_in_job(path_prefix=shim_dir)
    first = server.get("hpc-magics/server").json()
    assert (first["job_id"], first["job_name"], first["partition"], first["nodes"]) == \
        (server.job, "hpc-magics-test-server", "debug", 1)
    assert first["pending"] is (server.times_from_slurm is None)
    answer = first
    deadline = time.monotonic() + 60
    while answer["pending"]:
        assert time.monotonic() < deadline, "the scheduler's answer never came in"
        time.sleep(0.5)
        answer = server.get("hpc-magics/server").json()
    assert answer["end_time"] == pytest.approx(scheduler_end_time(server.job), abs=1)
    assert answer["node_hours_used"] is not None


def test_own_job_reads_a_real_job_record(server_in_job: StartInJob) -> None:
    server = server_in_job()
    job = own_job({"SLURM_JOB_ID": server.job})
    assert job is not None
    assert job.end_time == pytest.approx(scheduler_end_time(server.job), abs=1)
    assert job.nodes == 1 and job.partition == "debug"
    assert own_job({}) is None


def test_jobs_lists_and_cancels_another_job_but_not_the_servers(
        server_in_job: StartInJob, tmp_path: Path, sacct_state: SacctState,
        sleeper_job: Callable[[Path], str]) -> None:
    server = server_in_job()
    other = sleeper_job(tmp_path / "other")
    # the server watches the queue from its start: its cached view may predate the sbatch,
    # or the job's start (a site's Prolog, as on the --release clusters, holds a started
    # job in CONFIGURING for a moment)
    deadline = time.monotonic() + 30
    while True:
        listed = server.get("hpc-magics/jobs").json()
        by_id = {job["job_id"]: job for job in listed["jobs"]}
        if by_id.get(other, {}).get("state") == "RUNNING":
            break
        assert time.monotonic() < deadline, \
            f"job {other} never listed as running: {by_id.get(other) or sorted(by_id)}"
        time.sleep(1)
    assert listed["server_job_id"] == server.job
    assert by_id[server.job]["is_server"] is True
    assert by_id[other]["is_server"] is False
    assert by_id[other]["name"] == "hpc-magics-test-sleeper"
    assert by_id[other]["time_limit_s"] == 300
    assert by_id[other]["nodes"] == 1

    refused = server.post(f"hpc-magics/jobs/{server.job}/cancel")
    assert refused.status_code == 409
    assert "server/stop" in refused.json()["message"]

    assert server.post(f"hpc-magics/jobs/{other}/cancel").json() == {"cancelled": other}
    assert sacct_state(other, until={"CANCELLED"}) == "CANCELLED"
    assert squeue_state(server.job) == "RUNNING"
    # The cancel invalidated the cache: the next list no longer shows the job running.
    again = {job["job_id"]: job for job in server.get("hpc-magics/jobs").json()["jobs"]}
    assert other not in again or again[other]["state"] != "RUNNING", again[other]


def test_stop_ends_only_the_servers_job_and_leaves_no_process(
        server_in_job: StartInJob, tmp_path: Path, sacct_state: SacctState,
        sleeper_job: Callable[[Path], str]) -> None:
    server = server_in_job()
    other = sleeper_job(tmp_path / "other")
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    assert processes_mentioning(kernel["id"]) and processes_mentioning(server.command_mark)

    # Try to steer the stop at the other job: query, JSON body and form field are ignored.
    answer = server.post(f"hpc-magics/server/stop?job_id={other}",
                         json={"job_id": other, "id": other})
    assert answer.json() == {"stopping": True, "job_id": server.job, "kernel_jobs": [],
                             "allocations_left_running": []}

    assert sacct_state(server.job, until=ENDED, timeout=60) in ENDED
    assert squeue_state(other) == "RUNNING"
    deadline = time.monotonic() + 30
    while processes_mentioning(server.command_mark) or processes_mentioning(kernel["id"]):
        assert time.monotonic() < deadline, (processes_mentioning(server.command_mark),
                                             processes_mentioning(kernel["id"]))
        time.sleep(0.2)
    assert not server.answers()


def test_idle_stop_ends_the_job(server_in_job: StartInJob, sacct_state: SacctState) -> None:
    server = server_in_job("--HpcMagicsServer.idle_stop_minutes=0.1333",
                           "--HpcMagicsServer.idle_check_interval_s=0.5")
    started = time.monotonic()
    info = server.get("hpc-magics/server").json()
    assert info["idle_stop_minutes"] == pytest.approx(8 / 60, abs=0.001)
    assert info["idle_stop_at"] - info["now"] <= 8
    # Polling like an open browser tab does not keep it alive.
    while server.answers() and time.monotonic() - started < 60:
        try:
            server.get("hpc-magics/server")
            server.get("api/kernels")
        except requests.ConnectionError:
            break  # it stopped itself between the check and the request: what we wait for
        time.sleep(1)
    assert sacct_state(server.job, until=ENDED, timeout=60) in ENDED
    assert "no activity for 8 s" in server.log
    # accounting may call the job over before its node has ended the last process (the
    # test above waits the same way; on a --release node it was still there once)
    deadline = time.monotonic() + 30
    while processes_mentioning(server.command_mark):
        assert time.monotonic() < deadline, processes_mentioning(server.command_mark)
        time.sleep(0.2)


SQUEUE_SHIM = """#!/bin/sh
# Counts squeue calls for test_concurrent_jobs_requests_share_one_squeue, then runs the real one.
echo "$$ $*" >> {log}
exec {real} "$@"
"""


def test_concurrent_jobs_requests_share_one_squeue(server_in_job: StartInJob,
                                                   tmp_path: Path) -> None:
    """N concurrent GET /hpc-magics/jobs run at most one ``squeue -u``.

    Counted with a PATH shim: the server's job puts a directory first on PATH whose
    ``squeue`` appends its arguments to a log and then execs the real squeue.
    """
    real = commands.run(["sh", "-c", "command -v squeue"], timeout=10).stdout.strip()
    shim_dir, log = tmp_path / "shim", tmp_path / "squeue-calls.log"
    shim_dir.mkdir()
    (shim_dir / "squeue").write_text(SQUEUE_SHIM.format(log=log, real=real))
    (shim_dir / "squeue").chmod(0o755)
    server = server_in_job("--HpcMagicsServer.jobs_poll_interval_s=60", path_prefix=shim_dir)

    def user_queries() -> list[str]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [line for line in lines if " -u " in f" {line} "]

    assert len(user_queries()) <= 1  # the server's own watch over the jobs, from its start
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda _: server.get("hpc-magics/jobs").json(), range(16)))
        infos = list(pool.map(lambda _: server.get("hpc-magics/server").json(), range(16)))
    assert len(user_queries()) == 1, user_queries()
    # The server's own job record: where the release tells the job its times
    # (SLURM_JOB_START_TIME/END_TIME, 24.11) nothing is asked; else one squeue -j for all tabs.
    own_queries = [q for q in log.read_text().splitlines() if f"-j {server.job}" in q]
    assert len(own_queries) == (0 if server.times_from_slurm else 1), own_queries
    assert {info["job_id"] for info in infos} == {server.job}
    assert len({a["updated"] for a in answers}) == 1
    assert server.job in {job["job_id"] for job in answers[0]["jobs"]}
    # A kernel-side view (another process, same runtime dir) reuses the server's answer.
    kernel_view = JobQueue(cache_dir=server.runtime_dir, interval_s=60).view()
    assert kernel_view.updated == answers[0]["updated"]
    assert len(user_queries()) == 1


STOP_FROM_THE_WIDGET = """
from hpc_magics.server.client import ServerControl
from hpc_magics.widgets.server import ServerWidget
control = ServerControl.discover()
print("stop target:", control.stop_target)
widget = ServerWidget(control.status(), stop_target=control.stop_target,
                      read_status=control.status, stop=control.stop, tick_s=None)
widget.stop_button.click()
widget.confirm_button.click()
print("said:", widget.message.value)
"""


def test_hpc_server_in_a_kernel_finds_and_stops_its_server(
        server_in_job: StartInJob, sacct_state: SacctState) -> None:
    """The kernel inherits the job; %hpc_server reaches the server that is its ancestor."""
    server = server_in_job()
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    shown = execute(server, kernel["id"], "%load_ext hpc_magics\n%hpc_server --text")
    assert f"job {server.job} · " in shown, shown
    assert "Slurm job: " + server.job in shown
    said = execute(server, kernel["id"], STOP_FROM_THE_WIDGET)
    assert "stop target: server" in said, said
    assert sacct_state(server.job, until=ENDED, timeout=60) in ENDED
    if "said:" in said:  # the kernel may be shut down before its output gets out
        assert f"The server is stopping and cancelling job {server.job}." in said
    deadline = time.monotonic() + 30
    while processes_mentioning(server.command_mark) or processes_mentioning(kernel["id"]):
        assert time.monotonic() < deadline
        time.sleep(0.2)


@pytest.mark.skipif(not HOSTS_APART, reason="the default test cluster's nodes are this host: "
                    "tests/sites/test_release_clusters.py runs this on the --release clusters")
def test_server_on_a_compute_host_is_reached_from_the_login_host(
        server_in_job: StartInJob) -> None:
    server = server_in_job()
    node = urlparse(server.url).hostname
    assert node in {"c1", "c2"} and node != socket.gethostname(), server.url
    assert server.get("hpc-magics/server").json()["job_id"] == server.job
    # it listens on the node's address only: the login host's loopback has no such server
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url.replace(f"//{node}:", "//127.0.0.1:") + "api", timeout=5)
