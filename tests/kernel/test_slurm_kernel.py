"""The Slurm kernel on the real test cluster, started with jupyter_client's KernelManager as
JupyterLab starts kernels: a job per kernel, a step of an allocation, refusals, pending."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from jupyter_client import KernelManager
from jupyter_client.ioloop import AsyncIOLoopKernelManager

from hpc_magics.core.errors import InvalidRequest, SubmissionError
from hpc_magics.scheduler import commands

from .conftest import (
    GONE_WITHIN_S,
    Started,
    install,
    interrupts_and_lives_on,
    jobs_named,
    jobs_named_once_accounted,
    kernelspec_file,
    run_code,
    squeue_ids,
    start,
    wait_until_gone,
)
from .sockets import in_kernel_code

if TYPE_CHECKING:  # fixture types only; test modules do not import conftest at run time
    from conftest import SacctState

pytestmark = pytest.mark.slurm  # each test well under 30 s: not `slow`


def test_a_kernel_runs_as_a_job_interrupts_and_leaves_no_job(
        kernel_prefix: Path, started: Started) -> None:
    assert install("lab-node", kernel_prefix, "--profile", "lab", "-t", "10") == 0
    manager, client = start("lab-node", started)
    job_id = manager.provisioner.job_id
    assert job_id and squeue_ids(job_id) == [job_id]

    printed, reply = run_code(client, "import os, socket\n"
                              "print(os.environ['SLURM_JOB_ID'], socket.gethostname())")
    assert reply["status"] == "ok"
    reported_job, host = printed.split()
    assert reported_job == job_id
    assert host  # the compute node's host name, as the kernel sees it

    # bound to the node's address, never all interfaces; the connection file private
    assert manager.ip not in {"0.0.0.0", "*", ""}
    folder = manager.provisioner.folder.path
    connection = folder / "connection.json"
    assert stat.S_IMODE(connection.stat().st_mode) == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700  # jupyter_client adds the sticky bit
    assert json.loads(connection.read_text())["ip"] == manager.ip

    # what the operating system says the kernel bound: the node's address only
    printed, _ = run_code(client, in_kernel_code())
    bound = {(line.split()[0], int(line.split()[1])) for line in printed.splitlines()}
    assert {address for address, _ in bound} == {manager.ip}, printed
    kernel_ports = {value for key, value in json.loads(connection.read_text()).items()
                    if key.endswith("_port")}
    assert kernel_ports <= {port for _, port in bound}, printed

    interrupts_and_lives_on(manager, client)

    client.stop_channels()
    manager.shutdown_kernel()
    assert wait_until_gone(job_id) < GONE_WITHIN_S
    assert not connection.exists()  # the key is of no use any more: removed


def test_a_kernel_in_an_existing_allocation_is_a_step_of_it(
        kernel_prefix: Path, started: Started, user_allocation: str) -> None:
    allocation = user_allocation
    assert install("lab-step", kernel_prefix, "--profile", "lab", "--jobid",
                   allocation) == 0
    manager, client = start("lab-step", started)
    printed, _ = run_code(client, "import os\n"
                          "print(os.environ['SLURM_JOB_ID'], "
                          "os.environ['SLURM_STEP_ID'])")
    job, step = printed.split()
    assert job == allocation
    assert step.isdigit()
    client.stop_channels()
    manager.shutdown_kernel()
    wait_until_gone(allocation, target=f"{allocation}.{step}")
    assert squeue_ids(allocation) == [allocation]  # the allocation itself stays


def test_a_wrong_request_fails_at_start_with_one_line_and_no_job(
        kernel_prefix: Path, started: Started) -> None:
    assert install("lab-wrong", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    # the profile or the kernelspec changed after install: a GPU type the lab lacks
    spec_path = kernelspec_file(kernel_prefix, "lab-wrong")
    spec = json.loads(spec_path.read_text())
    spec["metadata"]["kernel_provisioner"]["config"]["request"]["gpus_per_node"] = "a100:1"
    spec_path.write_text(json.dumps(spec))
    since = time.time()
    manager = KernelManager(kernel_name="lab-wrong")
    started.append(manager)
    with pytest.raises(InvalidRequest) as refused:
        manager.start_kernel()
    message = str(refused.value)
    assert "'a100' does not exist" in message and "v100" in message
    assert "\n" not in message
    time.sleep(2)  # sacct lags the scheduler by up to 1.5 s
    assert jobs_named("kernel-lab-wrong", since) == []


def test_a_pending_kernel_says_why_it_waits_and_is_cancelled(
        kernel_prefix: Path, started: Started, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch, sacct_state: SacctState) -> None:
    monkeypatch.setenv("HPC_MAGICS_POLL_INTERVAL", "1")
    blocker = commands.run(["sbatch", "--parsable", "-J", f"kernel-blocker-{os.getpid()}",
                            "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300"], timeout=60)
    assert blocker.ok, blocker.stderr
    blocker_id = blocker.stdout.strip().split(";")[0]
    try:
        assert install("lab-pending", kernel_prefix, "--profile", "lab", "-t", "5",
                       "-d", f"afterok:{blocker_id}") == 0
        spec_path = kernelspec_file(kernel_prefix, "lab-pending")
        spec = json.loads(spec_path.read_text())
        spec["metadata"]["kernel_provisioner"]["config"]["start_timeout"] = 6
        spec_path.write_text(json.dumps(spec))
        manager = KernelManager(kernel_name="lab-pending")
        started.append(manager)
        with caplog.at_level(logging.INFO), pytest.raises(SubmissionError) as gave_up:
            manager.start_kernel()
        assert "did not start within 6s" in str(gave_up.value)
        waiting = [r.getMessage() for r in caplog.records if "pending:" in r.getMessage()]
        assert waiting and "depend" in waiting[0].lower(), caplog.text
        job_id = manager.provisioner.job_id
        assert job_id and job_id in waiting[0]
        assert wait_until_gone(job_id) < GONE_WITHIN_S
        assert sacct_state(job_id, until={"CANCELLED"}) == "CANCELLED"
    finally:
        commands.run(["scancel", blocker_id], timeout=30)


def test_a_kernel_whose_job_ended_is_reported_dead_not_resubmitted(
        kernel_prefix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job ends under the kernel (here scancel; a time limit alike): the server's
    restarter must not submit a new job on its own: one job, and the kernel is dead."""
    monkeypatch.setenv("HPC_MAGICS_POLL_INTERVAL", "1")
    assert install("lab-ends", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    since = time.time()

    async def scenario() -> tuple[str, list[str]]:
        manager = AsyncIOLoopKernelManager(kernel_name="lab-ends")
        events: list[str] = []
        dead = asyncio.Event()
        await manager.start_kernel()
        try:
            manager.add_restart_callback(lambda: events.append("restart"), "restart")
            manager.add_restart_callback(lambda: (events.append("dead"), dead.set()), "dead")
            job_id = str(manager.provisioner.job_id)
            assert commands.run(["scancel", job_id], timeout=30).ok
            await asyncio.wait_for(dead.wait(), timeout=60)
        finally:
            await manager.shutdown_kernel(now=True)
        return job_id, events

    # a thread of its own: the browser tests' session-wide Playwright keeps an event loop
    # running in this thread, and asyncio.run refuses to start under it
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job_id, events = pool.submit(asyncio.run, scenario()).result()
    assert events == ["dead"]
    assert jobs_named_once_accounted("kernel-lab-ends", since, job_id) == [job_id]
