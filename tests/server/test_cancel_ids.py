"""The REST cancel route with array and heterogeneous job ids, on the real cluster."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import StartLocal

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def array_job(slurm_cluster: Any, tmp_path: Path) -> Iterator[str]:
    answer = commands.run(["sbatch", "--parsable", "-p", "debug", "-t", "3", "--array=1-3",
                           "-o", str(tmp_path / "slurm-%A_%a.out"), "--wrap", "sleep 300"],
                          timeout=30)
    assert answer.ok, answer.stderr
    job_id = answer.stdout.strip().split(";")[0]
    yield job_id
    commands.run(["scancel", job_id], timeout=30)  # ours, by id


def queue_states(job_id: str) -> dict[str, str]:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%i|%T"], timeout=30)
    return dict(line.split("|") for line in answer.stdout.split())


def test_cancel_route_takes_array_tasks_ranges_and_het_ids(
        local_server: StartLocal, array_job: str, sacct_state: Any) -> None:
    deadline = time.monotonic() + 60
    while queue_states(array_job) != {f"{array_job}_{n}": "RUNNING" for n in (1, 2, 3)}:
        assert time.monotonic() < deadline, queue_states(array_job)
        time.sleep(0.5)
    server = local_server()
    one = server.post(f"hpc-magics/jobs/{array_job}_2/cancel")
    assert one.status_code == 200 and one.json() == {"cancelled": f"{array_job}_2"}
    assert sacct_state(f"{array_job}_2", until={"CANCELLED"}) == "CANCELLED"
    assert sacct_state(f"{array_job}_1") == "RUNNING"  # only the task asked for
    rest = server.post(f"hpc-magics/jobs/{array_job}_%5B1-3%5D/cancel")  # 123_[1-3], quoted
    assert rest.status_code == 200 and rest.json() == {"cancelled": f"{array_job}_[1-3]"}
    for task in (1, 3):
        assert sacct_state(f"{array_job}_{task}", until={"CANCELLED"}) == "CANCELLED"
    # ids that are not the user's jobs stay 404; what is not a job id is refused
    assert server.post("hpc-magics/jobs/999999999_4/cancel").status_code == 404
    assert server.post("hpc-magics/jobs/999999999+0/cancel").status_code == 404
    assert server.post("hpc-magics/jobs/12_%5Bab%5D/cancel").status_code == 400
    assert server.post("hpc-magics/jobs/12_x/cancel").status_code == 404
