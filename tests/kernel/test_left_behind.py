"""A kernel job whose notebook kernel was killed is found and offered for cancel, never
cancelled silently; ``hpc-magics kernel cleanup`` cancels it. On the test cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.cli import main as cli_main
from hpc_magics.kernel.orphans import left_behind, owner, owner_gone
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.processes import started

from .conftest import squeue_ids

KILLED_NOTEBOOK = """
import os, signal
from IPython.core.interactiveshell import InteractiveShell
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.kernel import session
ip = InteractiveShell.instance()
ip.run_line_magic('load_ext', 'hpc_magics')
ip.magics_manager.registry['HpcMagicsKernel'].request = ResourceRequest(profile='lab')
ip.run_line_magic('hpc_session', 'start {name} -t 5')
print('JOB', session.get('{name}').job_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no exit hook runs: the job is left behind
"""


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
def test_a_killed_notebooks_session_job_is_offered_then_cleaned_up(
        slurm_cluster: object, provisioner_registered: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    name = f"orphan{os.getpid()}"
    killed = subprocess.run([sys.executable, "-c", KILLED_NOTEBOOK.format(name=name)],
                            capture_output=True, text=True, timeout=300, check=False)
    job_id = next(line.split()[1] for line in killed.stdout.splitlines()
                  if line.startswith("JOB ")) if "JOB " in killed.stdout else ""
    assert job_id, killed.stderr
    try:
        assert squeue_ids(job_id) == [job_id]  # the killed kernel could not cancel it
        found = {entry.job_id: entry for entry in left_behind()}
        assert found[job_id].kind == "session"

        ip: Any = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "hpc_magics")  # the next start offers it
        ip.run_line_magic("hpc_session", "list")
        offered = capsys.readouterr().err
        assert f"session job {job_id} (kernel-session-{name}): cancel with " \
               f"%hpc_cancel {job_id}" in offered
        assert cli_main(["kernel", "list"]) == 0
        assert f"job {job_id}" in capsys.readouterr().err
        assert squeue_ids(job_id) == [job_id]  # offered, never cancelled silently

        assert cli_main(["kernel", "cleanup"]) == 0
        assert f"cancelled session job {job_id}" in capsys.readouterr().out
        deadline = time.monotonic() + 15
        while squeue_ids(job_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert squeue_ids(job_id) == []
        assert job_id not in {entry.job_id for entry in left_behind()}
    finally:
        commands.run(["scancel", job_id], timeout=30)


@pytest.mark.slurm
def test_a_left_behind_step_is_cancelled_alone_never_the_users_allocation(
        slurm_cluster: object, provisioner_registered: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    answer = commands.run(["sbatch", "--parsable", "-J", f"orphan-alloc-{os.getpid()}", "-t",
                           "5", "-o", "/dev/null", "--wrap", "sleep 300"], timeout=60)
    assert answer.ok, answer.stderr
    allocation = answer.stdout.strip().split(";")[0]
    name = f"orphanstep{os.getpid()}"
    script = KILLED_NOTEBOOK.format(name=name).replace(
        f"'start {name} -t 5'", f"'start {name} --jobid {allocation}'")
    try:
        killed = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                text=True, timeout=300, check=False)
        assert f"JOB {allocation}" in killed.stdout, killed.stderr
        entry = next(e for e in left_behind() if e.job_id == allocation)
        assert entry.allocation and entry.target == f"{allocation}.{entry.step_id}"
        assert cli_main(["kernel", "list"]) == 0
        assert f"job {entry.target} (kernel-session-{name}): cancel with hpc-magics kernel " \
               "cleanup" in capsys.readouterr().err
        assert cli_main(["kernel", "cleanup"]) == 0
        assert f"cancelled session job {entry.target}" in capsys.readouterr().out
        deadline = time.monotonic() + 15
        while entry.target in step_ids(allocation) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert entry.target not in step_ids(allocation)
        assert squeue_ids(allocation) == [allocation]  # the allocation itself stays
    finally:
        commands.run(["scancel", allocation], timeout=30)


def step_ids(job_id: str) -> list[str]:
    listed = commands.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i"], timeout=20)
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]
