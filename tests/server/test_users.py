"""The server's job list and cancel route as an ordinary user, beside another user's job.

Runs as an ordinary user (scripts/run-tests runs the suite as hpcuser1); skips as root.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import StartLocal

if TYPE_CHECKING:  # fixture types only; test modules do not import conftest at run time
    from conftest import OtherUser, SacctState

pytestmark = pytest.mark.timeout(180)

SLEEPER = ("sbatch", "--parsable", "-t", "5", "--chdir=/tmp", "-o", "/dev/null",
           "--job-name=hpc-magics-users-test", "--wrap", "sleep 300")


def job_ids(server: Any) -> set[str]:
    answer = server.get("hpc-magics/jobs")
    assert answer.status_code == 200, answer.text
    return {job["job_id"] for job in answer.json()["jobs"]}


def test_job_list_and_cancel_route_only_touch_own_jobs(
        local_server: StartLocal, slurm_cluster: Any, unprivileged_user: str,
        second_user: OtherUser, sacct_state: SacctState) -> None:
    theirs = second_user.run(*SLEEPER).stdout.strip().split(";")[0]
    mine_submitted = commands.run(list(SLEEPER), timeout=30)
    assert mine_submitted.ok, mine_submitted.first_error_line()
    mine = mine_submitted.stdout.strip().split(";")[0]
    try:
        server = local_server()
        deadline = time.monotonic() + 30
        while mine not in (listed := job_ids(server)):  # the queue cache may predate sbatch
            assert time.monotonic() < deadline, f"job {mine} never listed: {listed}"
            time.sleep(1)
        assert theirs not in listed, "squeue -u lists only the user's own jobs"

        # the per-user queue cache lives in this server's runtime dir, named for the user
        caches = list(server.runtime_dir.glob(f"*squeue*{unprivileged_user}*"))
        assert caches, f"no queue cache for {unprivileged_user} in {server.runtime_dir}"
        assert all(cache.stat().st_uid == os.getuid() for cache in caches)

        refused = server.post(f"hpc-magics/jobs/{theirs}/cancel")
        assert refused.status_code == 404, refused.text
        assert theirs in refused.text
        assert sacct_state(theirs) in {"RUNNING", "PENDING"}

        cancelled = server.post(f"hpc-magics/jobs/{mine}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert sacct_state(mine, until={"CANCELLED"}) == "CANCELLED"
        assert sacct_state(theirs) in {"RUNNING", "PENDING"}
    finally:
        second_user.run("scancel", theirs, check=False)
        commands.run(["scancel", mine], timeout=30)
