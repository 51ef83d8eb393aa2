"""A kernel job whose Jupyter server was killed is found and offered for cancel, never
cancelled silently; ``hpc-magics kernel cleanup`` cancels it. On the test cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpc_magics.cli import main as cli_main
from hpc_magics.kernel.orphans import left_behind, offer_left_behind, owner, owner_gone
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.processes import started

from .conftest import install, squeue_ids

KILLED_SERVER = """
import os, signal
from jupyter_client import KernelManager
manager = KernelManager(kernel_name={name!r})
manager.start_kernel()
print('JOB', manager.provisioner.job_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no exit hook runs: the job is left behind
"""


def killed_server(name: str) -> str:
    """Start kernel ``name`` from a process that is then killed; the job's id."""
    killed = subprocess.run([sys.executable, "-c", KILLED_SERVER.format(name=name)],
                            capture_output=True, text=True, timeout=300, check=False)
    job_id = next((line.split()[1] for line in killed.stdout.splitlines()
                   if line.startswith("JOB ")), "")
    assert job_id, killed.stderr
    return job_id


def test_an_owner_that_ended_is_gone_and_a_live_one_is_not() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        alive = {**owner(), "owner_pid": child.pid, "owner_started": started(child.pid)}
        assert not owner_gone(alive)
        # a start time unknown, or not the process's own: the pid alone never decides
        assert owner_gone({**alive, "owner_started": None})
        assert owner_gone({**alive, "owner_started": owner()["owner_started"]})
    finally:
        child.kill()
        child.wait(timeout=10)
    assert owner_gone(alive)
    assert not owner_gone(owner())  # this very process
    assert not owner_gone({**alive, "owner_host": "another-host"})  # cannot tell: not gone


@pytest.mark.slurm
def test_a_killed_servers_kernel_job_is_offered_then_cleaned_up(
        kernel_prefix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = f"orphan{os.getpid()}"
    assert install(name, kernel_prefix, "--profile", "lab", "-t", "5") == 0
    job_id = killed_server(name)
    try:
        assert squeue_ids(job_id) == [job_id]  # the killed server could not cancel it
        found = {entry.job_id: entry for entry in left_behind()}
        assert found[job_id].name == f"kernel-{name}"

        capsys.readouterr()
        offer_left_behind()  # what the next %load_ext says
        offered = capsys.readouterr().err
        assert f"kernel job {job_id} (kernel-{name}): cancel with " \
               f"%hpc_cancel {job_id}" in offered
        assert cli_main(["kernel", "list"]) == 0
        assert f"job {job_id}" in capsys.readouterr().err
        assert squeue_ids(job_id) == [job_id]  # offered, never cancelled silently

        assert cli_main(["kernel", "cleanup"]) == 0
        assert f"cancelled kernel job {job_id}" in capsys.readouterr().out
        deadline = time.monotonic() + 15
        while squeue_ids(job_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert squeue_ids(job_id) == []
        assert job_id not in {entry.job_id for entry in left_behind()}
    finally:
        commands.run(["scancel", job_id], timeout=30)


@pytest.mark.slurm
def test_a_left_behind_step_is_cancelled_alone_never_the_users_allocation(
        kernel_prefix: Path, user_allocation: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    allocation = user_allocation
    name = f"orphanstep{os.getpid()}"
    assert install(name, kernel_prefix, "--profile", "lab", "--jobid", allocation) == 0
    assert killed_server(name) == allocation
    entry = next(e for e in left_behind() if e.job_id == allocation)
    assert entry.allocation and entry.target == f"{allocation}.{entry.step_id}"
    assert cli_main(["kernel", "list"]) == 0
    assert f"job {entry.target} (kernel-{name}): cancel with hpc-magics kernel " \
           "cleanup" in capsys.readouterr().err
    assert cli_main(["kernel", "cleanup"]) == 0
    assert f"ended kernel step {entry.target}; your allocation {allocation} left running" \
        in capsys.readouterr().out  # says what it ended, and what it did not
    deadline = time.monotonic() + 15
    while entry.target in step_ids(allocation) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert entry.target not in step_ids(allocation)
    assert squeue_ids(allocation) == [allocation]  # the allocation itself stays


def step_ids(job_id: str) -> list[str]:
    listed = commands.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i"], timeout=20)
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]
