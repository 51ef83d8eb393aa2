"""The Slurm kernel started by a real ``jupyter server`` (what JupyterLab's launcher asks):
its REST API starts the kernel, the kernel runs in a job, deleting it cancels the job; a
wrong request is refused with its one line and no job."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests
from server.conftest import StartLocal, execute, local_server  # noqa: F401 - a fixture

from .conftest import install, jobs_named, kernelspec_file, squeue_ids

pytestmark = pytest.mark.slurm  # each test well under 30 s: not `slow`


def test_the_server_starts_a_slurm_kernel_and_deleting_it_cancels_the_job(
        slurm_cluster: object, kernel_prefix: Path, local_server: StartLocal) -> None:  # noqa: F811
    assert install("lab-served", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    server = local_server()
    started = server.post("api/kernels", json={"name": "lab-served"})
    assert started.status_code == 201, started.text
    kernel_id = started.json()["id"]
    job_id = execute(server, kernel_id, "import os; print(os.environ['SLURM_JOB_ID'])").strip()
    assert job_id.isdigit() and squeue_ids(job_id) == [job_id]

    deleted = requests.delete(f"{server.url}api/kernels/{kernel_id}", headers=server.headers(),
                              timeout=60)
    assert deleted.status_code == 204, deleted.text
    deadline = time.monotonic() + 15
    while squeue_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue_ids(job_id) == []


def test_the_server_refuses_a_wrong_request_with_one_line_and_no_job(
        slurm_cluster: object, kernel_prefix: Path, local_server: StartLocal) -> None:  # noqa: F811
    assert install("lab-refused", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    spec_path = kernelspec_file(kernel_prefix, "lab-refused")
    spec = json.loads(spec_path.read_text())
    spec["metadata"]["kernel_provisioner"]["config"]["request"]["gpus_per_node"] = "a100:1"
    spec_path.write_text(json.dumps(spec))
    server = local_server()
    since = time.time()
    refused = server.post("api/kernels", json={"name": "lab-refused"})
    assert refused.status_code == 400, refused.text
    assert "GPU type 'a100' does not exist in partition 'debug': use one of v100" in \
        refused.json()["message"]
    time.sleep(2)  # sacct lags the scheduler by up to 1.5 s
    assert jobs_named("kernel-lab-refused", since) == []
