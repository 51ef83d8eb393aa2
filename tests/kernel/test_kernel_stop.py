"""``%hpc_server``'s Stop inside a Slurm kernel ends that kernel and nothing else: in an
allocation of the user's (``--jobid``) only the kernel's step, never the allocation."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.node.kernel import KERNEL_TARGET_ENV
from hpc_magics.scheduler import commands
from hpc_magics.server.client import ServerControl, slurm_kernel_target
from hpc_magics.widgets.server_view import STOP_KERNEL, STOP_NOTHING, STOP_STEP

from .conftest import (
    Started,
    install,
    run_code,
    squeue_ids,
    start,
    wait_for_output,
    wait_until_gone,
)

STOP = ("from hpc_magics.server.client import ServerControl\n"
        "control = ServerControl.discover()\n"
        "print('stop target:', control.stop_target, flush=True)\n"
        "print('said:', control.stop(), flush=True)\n")


def queue_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip()


@pytest.mark.slurm
def test_stop_in_a_jobid_kernel_ends_its_step_and_leaves_the_allocation(
        kernel_prefix: Path, started: Started, user_allocation: str) -> None:
    allocation = user_allocation
    assert install("lab-stop-step", kernel_prefix, "--profile", "lab", "--jobid",
                   allocation) == 0
    _, client = start("lab-stop-step", started)
    printed, _ = run_code(client, "import os\nprint(os.environ['SLURM_STEP_ID'])")
    step = f"{allocation}.{printed.strip()}"
    stopping = client.execute(STOP)  # no reply awaited: the kernel ends with its step
    wait_for_output(client, stopping, "stop target: step")
    wait_until_gone(allocation, target=step)
    assert squeue_ids(allocation) == [allocation]  # the user's allocation stays
    assert queue_state(allocation) == "RUNNING"


@pytest.mark.slurm
def test_stop_in_a_kernel_of_its_own_job_cancels_that_job(
        kernel_prefix: Path, started: Started) -> None:
    assert install("lab-stop-job", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    manager, client = start("lab-stop-job", started)
    job_id = str(manager.provisioner.job_id)
    stopping = client.execute(STOP)
    wait_for_output(client, stopping, "stop target: kernel")
    wait_until_gone(job_id)


def test_the_kernel_target_counts_only_in_the_kernels_own_job_and_step() -> None:
    job = {"SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0", KERNEL_TARGET_ENV: "41"}
    assert slurm_kernel_target(job) == "41"
    step = {"SLURM_JOB_ID": "41", "SLURM_STEP_ID": "3", KERNEL_TARGET_ENV: "41.3"}
    assert slurm_kernel_target(step) == "41.3"
    # inherited by a job the kernel submitted, or another step of the allocation: not ours
    assert slurm_kernel_target({**job, "SLURM_JOB_ID": "42"}) is None
    assert slurm_kernel_target({**step, "SLURM_STEP_ID": "4"}) is None
    assert slurm_kernel_target({"SLURM_JOB_ID": "41"}) is None  # not a Slurm kernel


def test_stop_targets_name_the_kernel_and_a_kernel_of_no_server_stops_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServerControl(None, "41").stop_target == STOP_KERNEL
    assert ServerControl(None, "41.3").stop_target == STOP_STEP
    # in someone's job (an allocation's shell), not a Slurm kernel, no server: never its job
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    assert ServerControl(None).stop_target == STOP_NOTHING


def test_the_stop_button_says_what_it_ends() -> None:
    from hpc_magics.scheduler.own_job import OwnJob
    from hpc_magics.scheduler.server_status import server_status
    from hpc_magics.widgets.server_view import server_view

    status = server_status(OwnJob("41"), 1_000_000.0)
    step = server_view(status, status.now, STOP_STEP)
    assert step.can_stop and step.stop_label == "Stop this kernel"
    assert "allocation 41? The allocation keeps running" in step.confirm_text
    job = server_view(status, status.now, STOP_KERNEL)
    assert job.stop_label == "Cancel job 41" and "runs only this kernel" in job.confirm_text
