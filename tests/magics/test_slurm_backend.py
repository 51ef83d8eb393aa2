"""%%sbatch on the real single-host Slurm cluster (scripts/slurm-cluster)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.core.errors import JobFailed


@pytest.fixture
def slurm_shell(shell: Any, slurm_cluster: Any) -> Any:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    return shell


def last_handle(shell: Any) -> Any:
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    return magics.handles[magics.last_job]


def test_round_trip_with_wait(slurm_shell: Any, cells: Any, sacct_state: Any,
                              capsys: pytest.CaptureFixture[str]) -> None:
    slurm_shell.run_cell(cells.SETUP)
    slurm_shell.run_cell_magic("sbatch", "--wait --name roundtrip", cells.WORK)
    handle = last_handle(slurm_shell)
    assert not handle.ran_locally
    out = capsys.readouterr().out
    assert "sum on the node: 135.0" in out
    assert slurm_shell.user_ns["scaled"].sum() == 135.0
    assert slurm_shell.user_ns["summary"].total == 135.0
    assert sacct_state(handle.job_id, until={"COMPLETED"}, timeout=20) == "COMPLETED"
    # the cell's print went to the job's log too, and job.sh is what sbatch ran
    assert "sum on the node: 135.0" in handle.log()
    script = (handle.folder.path / "job.sh").read_text()
    assert "#SBATCH --time=00:05:00" in script and "#SBATCH --job-name=roundtrip" in script
    assert "umask 077" in script


def test_later_fetch_and_exception(slurm_shell: Any, cells: Any) -> None:
    slurm_shell.run_cell(cells.SETUP)
    slurm_shell.run_cell_magic("sbatch", "", cells.WORK)
    handle = last_handle(slurm_shell)
    assert handle.wait(timeout=120) in {"COMPLETED", "RUNNING", "COMPLETING"}
    slurm_shell.run_line_magic("hpc_fetch", handle.job_id)
    assert slurm_shell.user_ns["root"] == pytest.approx(135.0 ** 0.5)

    with pytest.raises(JobFailed) as raised:
        slurm_shell.run_cell_magic("sbatch", "--wait", cells.FAILING)
    assert "ZeroDivisionError" in raised.value.remote_traceback
    assert "return int(x) // 0" in raised.value.remote_traceback
    # the exception's type and Python's own words, whatever they are in this release
    # (3.10-3.13: "integer division or modulo by zero", 3.14: "division by zero")
    assert re.search(r"ZeroDivisionError: [\w ]*by zero", str(raised.value)), str(raised.value)


def test_cancel_through_the_handle(slurm_shell: Any, sacct_state: Any) -> None:
    slurm_shell.run_cell_magic("sbatch", "", "import time\ntime.sleep(300)")
    handle = last_handle(slurm_shell)
    sacct_state(handle.job_id, until={"RUNNING"}, timeout=30)
    assert handle.cancel() == "CANCELLED"
    assert sacct_state(handle.job_id, until={"CANCELLED"}) == "CANCELLED"
    with pytest.raises(JobFailed, match="it was cancelled"):
        handle.fetch(show=False)


@pytest.mark.slow  # a time limit of one minute runs out
@pytest.mark.timeout(300)
def test_job_past_its_limit_ends_timeout(slurm_shell: Any, sacct_state: Any) -> None:
    slurm_shell.run_cell_magic("sbatch", "-t 1", "import time\ntime.sleep(600)")
    handle = last_handle(slurm_shell)
    state = handle.wait(timeout=240)
    assert state == "TIMEOUT"
    assert sacct_state(handle.job_id, until={"TIMEOUT"}) == "TIMEOUT"
    with pytest.raises(JobFailed, match="time limit: ask for more with -t"):
        handle.fetch(show=False)


def test_gpu_request_reaches_the_job(slurm_shell: Any) -> None:
    slurm_shell.run_cell_magic(
        "sbatch", "--wait --gpus-per-node v100:1",
        "import os\nvisible = os.environ.get('CUDA_VISIBLE_DEVICES')")
    # one device; which one is the node's free one (this cluster does not renumber them:
    # no ConstrainDevices), "1" while a test beside this one holds the node's first
    assert slurm_shell.user_ns["visible"] in {"0", "1"}


def test_partition_missing_on_the_live_cluster(shell: Any, slurm_cluster: Any,
                                               job_folders: Any) -> None:
    # the generic profile knows no partitions: the live cluster's answer (scontrol) decides
    with pytest.raises(UsageError, match=r"partition 'nope' does not exist on this cluster: "
                                         r"use one of debug, long"):
        shell.run_cell_magic("sbatch", "--backend slurm -p nope -t 5", "x = 1")
    assert job_folders(shell) == []


def test_scheduler_rejection_is_one_line(shell: Any, slurm_cluster: Any) -> None:
    # the generic profile does not know debug's limit: sbatch itself refuses
    with pytest.raises(UsageError) as raised:
        shell.run_cell_magic("sbatch", "--backend slurm -p debug -t 45", "x = 1")
    message = str(raised.value)
    assert message.startswith("the scheduler refused the job:") and "\n" not in message


def test_submission_from_inside_another_job(slurm_shell: Any, cells: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # what a Jupyter server running as a Slurm job leaks into its kernels
    for key, value in {"SLURM_JOB_ID": "999999", "SLURM_JOBID": "999999",
                       "SLURM_MEM_PER_NODE": "999999999", "SLURM_NTASKS": "64",
                       "SLURM_JOB_PARTITION": "nope",
                       "SLURM_CPUS_PER_TASK": "99", "PMI_RANK": "3"}.items():
        monkeypatch.setenv(key, value)
    slurm_shell.run_cell(cells.SETUP)
    slurm_shell.run_cell_magic("sbatch", "--wait",
                               "import os\nparent = os.environ.get('SLURM_JOB_PARTITION')\n"
                               "ntasks = os.environ.get('SLURM_NTASKS')\nn = len(data)")
    assert slurm_shell.user_ns["n"] == 10
    assert slurm_shell.user_ns["parent"] == "debug"  # the job's own, not the leaked 'nope'
    # (SBATCH_* are the user's own defaults, not leaks: tests/magics/test_slurm_defaults.py)
    assert slurm_shell.user_ns["ntasks"] == "1"
    assert os.environ["SLURM_JOB_ID"] == "999999"  # the kernel's own environment is untouched


def test_reattach_after_kernel_restart(slurm_shell: Any, cells: Any) -> None:
    slurm_shell.run_cell(cells.SETUP)
    slurm_shell.run_cell_magic("sbatch", "", cells.WORK)
    magics = slurm_shell.magics_manager.registry["HpcMagicsKernel"]
    job_id = magics.last_job
    magics.handles.clear()
    magics.last_job = None
    time.sleep(0.5)
    slurm_shell.run_line_magic("hpc_fetch", f"{job_id} --wait")
    assert slurm_shell.user_ns["summary"].total == 135.0


@pytest.fixture
def no_accounting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sacct that answers as Slurm does when accounting is off.

    A fake on purpose: the test cluster runs slurmdbd, and turning accounting off for one
    test would restart the whole cluster. The rest (sbatch, squeue, scancel) is real.
    """
    shims = tmp_path / "shims"
    shims.mkdir()
    sacct = shims / "sacct"
    sacct.write_text("#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2\n"
                     "exit 1\n")
    sacct.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return shims


@pytest.mark.timeout(180)
def test_without_accounting_squeue_tells_the_state(slurm_shell: Any, cells: Any,
                                                   no_accounting: Path) -> None:
    slurm_shell.run_cell(cells.SETUP)
    slurm_shell.run_cell_magic("sbatch", "--wait", cells.WORK)
    assert slurm_shell.user_ns["summary"].total == 135.0

    slurm_shell.run_cell_magic("sbatch", "", "import time\ntime.sleep(300)")
    handle = last_handle(slurm_shell)
    deadline = time.monotonic() + 60
    while handle.refresh() != "RUNNING" and time.monotonic() < deadline:
        time.sleep(1)
    assert handle.state == "RUNNING"  # from squeue: sacct only ever fails here
    handle.cancel()
    assert handle.wait(timeout=90) == "ENDED"
    with pytest.raises(JobFailed, match="without accounting"):
        handle.fetch(show=False)


def test_several_tasks_run_the_cell_and_task_zero_answers(slurm_shell: Any) -> None:
    slurm_shell.run_cell_magic("sbatch", "--wait -N 2 --ntasks-per-node 2", "\n".join([
        "import os, socket",
        "rank = int(os.environ['SLURM_PROCID'])",
        "world = int(os.environ['SLURM_NTASKS'])",
        "print('task', rank, 'of', world, 'on', os.environ['SLURMD_NODENAME'], flush=True)",
    ]))
    assert slurm_shell.user_ns["rank"] == 0 and slurm_shell.user_ns["world"] == 4
    handle = last_handle(slurm_shell)
    output = (handle.folder.path / "output.txt").read_text()
    assert output.count("task ") == 1 and "task 0 of 4" in output
    # every task ran it: the other ranks' lines are in the job's logs, on both nodes
    logs = "".join(p.read_text() for p in handle.folder.path.glob("*_log.out"))
    assert all(f"task {rank} of 4" in logs for rank in range(4))
    assert "on c1" in logs and "on c2" in logs
