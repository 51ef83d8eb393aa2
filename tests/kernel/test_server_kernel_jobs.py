"""The server's view of its Slurm kernels (what the status bar and the stop dialog show), on
the test cluster: a pending kernel job with Slurm's reason, then its time left and cost so
far; "stop my server" and the idle stop end kernel jobs and list them first."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from server.conftest import RunningServer, StartLocal, local_server  # noqa: F401 - a fixture

from hpc_magics.scheduler import commands

from .conftest import install, jobs_named, squeue_ids

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(240)]

GONE_WITHIN_S = 15.0


def blocker_job() -> str:
    """A short job the kernel's job waits for (``-d afterany:``): it pends on Dependency
    until this one ends, a reason the test cluster gives on demand."""
    answer = commands.run(["sbatch", "--parsable", "-J", "kernel-blocker", "-t", "2",
                           "-o", "/dev/null", "--wrap", "sleep 120"], timeout=30)
    assert answer.ok, answer.first_error_line()
    return answer.stdout.strip().split(";")[0]


def kernels(server: RunningServer) -> list[dict[str, Any]]:
    answer = server.get("hpc-magics/kernels")
    assert answer.status_code == 200, answer.text
    listed: list[dict[str, Any]] = answer.json()["kernels"]
    return listed


def wait_for_kernel(server: RunningServer, name: str, phase: str, timeout: float = 90.0,
                    with_reason: bool = False) -> dict[str, Any]:
    """The kernel's entry once in ``phase`` (and, ``with_reason``, once Slurm gave a pending
    reason: before the scheduler's first look at a job it has none)."""
    deadline = time.monotonic() + timeout
    seen: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        seen = kernels(server)
        found = [k for k in seen if k["name"] == name and k["phase"] == phase
                 and (k.get("reason") or not with_reason)]
        if found:
            return found[0]
        time.sleep(1.0)
    pytest.fail(f"kernel {name} never {phase} in hpc-magics/kernels: {seen}", pytrace=False)


def start_kernel_in_background(server: RunningServer, name: str) -> dict[str, Any]:
    """POST api/kernels waits while the job pends: ask from a thread; the answer lands here."""
    answer: dict[str, Any] = {}

    def ask() -> None:
        reply = requests.post(f"{server.url}api/kernels", json={"name": name},
                              headers=server.headers(), timeout=180)
        answer.update(status=reply.status_code, body=reply.json())

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    answer["thread"] = thread
    return answer


def wait_gone(job_id: str) -> None:
    deadline = time.monotonic() + GONE_WITHIN_S
    while squeue_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue_ids(job_id) == [], f"kernel job {job_id} still in squeue"


def test_a_pending_kernel_shows_its_reason_then_time_left_and_cost_and_stop_ends_it(
        slurm_cluster: object, kernel_prefix: Path, local_server: StartLocal) -> None:  # noqa: F811
    blocker = blocker_job()
    try:
        assert install("lab-pends", kernel_prefix, "--profile", "lab", "-t", "5",
                       "-d", f"afterany:{blocker}") == 0
        server = local_server()
        started = start_kernel_in_background(server, "lab-pends")
        pending = wait_for_kernel(server, "lab-pends", "pending", with_reason=True)
        assert pending["reason"] == "Dependency", pending
        assert pending["reason_text"] == "waiting for the jobs it depends on to finish"
        assert pending["kind"] == "kernel" and pending["cost"] is None
        job_id = pending["job_id"]
        assert squeue_ids(job_id) == [job_id]
    finally:
        commands.run(["scancel", blocker], timeout=30)  # the kernel's job may start now

    started["thread"].join(timeout=120)
    assert started.get("status") == 201, started
    running = wait_for_kernel(server, "lab-pends", "running")
    assert running["job_id"] == job_id and running["reason"] == ""
    assert 0 < running["seconds_left"] <= 5 * 60, running
    assert running["end_time"] is not None and running["node_list"]
    amount, unit = running["cost"].split()  # the lab profile's billing rule, as %%sbatch
    assert float(amount) >= 0 and unit.endswith("-h"), running

    # the cell jobs' list says which jobs are kernels (the stop dialog lists those first)
    listed = server.get("hpc-magics/jobs").json()["jobs"]
    assert [j["kind"] for j in listed if j["job_id"] == job_id] == ["kernel"]

    stopped = server.post("hpc-magics/server/stop")
    assert stopped.status_code == 200 and stopped.json()["kernel_jobs"] == [job_id]
    assert server.process is not None and server.process.wait(timeout=60) == 0
    wait_gone(job_id)


def test_the_idle_stop_ends_the_kernel_job_and_says_so(
        slurm_cluster: object, kernel_prefix: Path, local_server: StartLocal) -> None:  # noqa: F811
    assert install("lab-idle", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    server = local_server("--HpcMagicsServer.idle_stop_minutes=0.3333",
                          "--HpcMagicsServer.idle_check_interval_s=1",
                          "--HpcMagicsServer.events_interval_s=2")
    since = time.time()
    started = requests.post(f"{server.url}api/kernels", json={"name": "lab-idle"},
                            headers=server.headers(), timeout=120)
    assert started.status_code == 201, started.text
    [job_id] = jobs_named("kernel-lab-idle", since)  # the server may stop any moment now
    assert server.process is not None and server.process.wait(timeout=90) == 0
    assert f"ending kernel jobs: kernel lab-idle (job {job_id})" in server.log, server.log[-3000:]
    wait_gone(job_id)


def test_a_kernel_in_the_users_allocation_is_listed_as_such_and_stop_keeps_the_allocation(
        kernel_prefix: Path, local_server: StartLocal, user_allocation: str) -> None:  # noqa: F811
    allocation = user_allocation
    assert install("lab-mine", kernel_prefix, "--profile", "lab", "--jobid",
                   allocation) == 0
    server = local_server()
    started = requests.post(f"{server.url}api/kernels", json={"name": "lab-mine"},
                            headers=server.headers(), timeout=120)
    assert started.status_code == 201, started.text
    second = requests.post(f"{server.url}api/kernels", json={"name": "lab-mine"},
                           headers=server.headers(), timeout=120)
    assert second.status_code == 201, second.text
    running = wait_for_kernel(server, "lab-mine", "running")
    assert running["job_id"] == allocation and running["own_allocation"] is True
    assert running["cost"] is None  # the allocation's cost is the user's, not ours
    # two kernels in one allocation: each listed, each with its own step
    deadline = time.monotonic() + 30
    while len(steps := {k["cancels"] for k in kernels(server)}) < 2 and \
            time.monotonic() < deadline:
        time.sleep(1.0)
    assert len(steps) == 2 and all(s and s.startswith(f"{allocation}.") for s in steps)

    stopped = server.post("hpc-magics/server/stop")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["kernel_jobs"] == []
    assert stopped.json()["allocations_left_running"] == [allocation]
    assert server.process is not None and server.process.wait(timeout=60) == 0
    for step in steps:
        said = f"ended kernel step {step}; your allocation {allocation} left running"
        assert said in server.log, server.log[-3000:]
    # the server is gone, its scancels done: the steps ended, the allocation did not
    left = commands.run(["squeue", "-h", "-s", "-j", allocation, "-o", "%i"], timeout=20)
    assert steps.isdisjoint(left.stdout.split())
    assert squeue_ids(allocation) == [allocation], server.log[-3000:]
