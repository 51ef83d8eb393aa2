"""What the status bar gets about kernel jobs and the allocation: pure parts on squeue's and
sshare's data, and one real sshare on the test cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.core.jobs import JobSnapshot
from hpc_magics.core.resources import ResourceRequest, to_dict
from hpc_magics.scheduler.allocation import parse_sshare
from hpc_magics.scheduler.job_status import JobStatus
from hpc_magics.server.allocation_view import allocation_json, chosen_account, read_allocation
from hpc_magics.server.events import TrackedJob
from hpc_magics.server.kernel_jobs import describe, is_kernel_job, kernel_job_json

NOW = 1_800_000_000.0
LAB_REQUEST = to_dict(ResourceRequest(partition="debug", time_s=600, cpus_per_task=2,
                                      profile="lab"))


def kernel(state: str, queued: JobSnapshot | None, *, name: str = "kernel-gpu",
           job_id: str = "41", kind: str = "kernel", ours: bool = True) -> TrackedJob:
    return TrackedJob(job_id, name, JobStatus(job_id, state, "squeue"), queued,
                      Path("/nowhere"), NOW - 60, ours, kind=kind, request=LAB_REQUEST)


def test_a_pending_kernel_job_says_slurms_reason_and_expected_start() -> None:
    queued = JobSnapshot("41", "PENDING", "kernel-gpu", "debug", "1", 0, 600,
                         reason="Resources", start_time=NOW + 300)
    shown = kernel_job_json(kernel("PENDING", queued), NOW)
    assert shown["name"] == "gpu" and shown["kind"] == "kernel"
    assert (shown["reason"], shown["expected_start"]) == ("Resources", NOW + 300)
    assert shown["reason_text"] == "waiting for free nodes: it is next in line"
    assert shown["seconds_left"] == 600 and shown["end_time"] is None
    assert shown["cost"] is None, "a pending job has cost nothing yet"


def test_a_running_kernel_job_shows_time_left_and_cost_so_far() -> None:
    queued = JobSnapshot("41", "RUNNING", "kernel-gpu", "debug", "1", 1800, 3600,
                         end_time=NOW + 1800, start_time=NOW - 1800, node_list="c1")
    shown = kernel_job_json(kernel("RUNNING", queued), NOW)
    assert shown["seconds_left"] == 1800 and shown["end_time"] == NOW + 1800
    # the lab profile bills by the core: 2 cores for half an hour
    assert shown["cost"] == "1.0000 core-h"
    assert shown["reason"] == "" and shown["expected_start"] is None


def test_only_live_kernel_jobs_of_this_server_count() -> None:
    mine = kernel("RUNNING", None)
    pending = kernel("PENDING", None, name="kernel-model", job_id="42")
    others = [kernel("RUNNING", None, job_id="43", ours=False),
              kernel("COMPLETED", None, job_id="44"),
              kernel("RUNNING", None, job_id="45", kind="")]  # a %%sbatch cell's job
    assert [job for job in [mine, pending, *others] if is_kernel_job(job)] == [mine, pending]
    assert describe([mine, pending]) == "kernel gpu (job 41), kernel model (job 42)"


SSHARE = ("root|||cpu=0,mem=0,billing=0\n"
          " hpcproj||billing=6000|cpu=5700,mem=0,billing=5700\n"
          "  hpcproj|hpcuser1||cpu=5700,mem=0,billing=5700\n")


def test_the_allocation_is_low_below_its_share_and_says_what_is_left() -> None:
    found = parse_sshare(SSHARE, "hpcproj")
    assert found is not None
    low = allocation_json(found, 0.10)
    assert low["text"] == "hpcproj: 5.0 billing-h left" and low["low"] is True
    assert (low["left_h"], low["limit_h"]) == (5.0, 100.0)
    assert allocation_json(found, 0.01)["low"] is False
    unlimited = parse_sshare("root|||cpu=0,billing=90\n", "root")
    assert unlimited is not None and allocation_json(unlimited, 0.1)["text"] == \
        "root: no limit set"


def test_the_account_is_the_configured_one_then_the_users_default() -> None:
    assert chosen_account("proj1", {"SBATCH_ACCOUNT": "proj2"}) == "proj1"
    assert chosen_account("", {"SBATCH_ACCOUNT": "proj2", "SLURM_ACCOUNT": "x"}) == "proj2"


def test_the_test_clusters_account_has_no_limit(slurm_cluster: object) -> None:
    account = chosen_account("", {})  # Slurm's default account of the user running this
    assert account in {"root", "hpcproj"}
    shown = read_allocation(account, "", 0.1, timeout_s=20)
    assert shown is not None and shown["text"] == f"{account}: no limit set", shown


def test_a_sites_balance_command_is_shown_as_it_says(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # a site's own tool, here a real command that prints what such tools print
    (tmp_path / "site.toml").write_text(
        'extends = "lab"\nbalance_command = ["printf", "%s\\\\n", "812 of 1000 core-h left"]\n')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(tmp_path))
    shown = read_allocation("hpcproj", "site", 0.1, timeout_s=20)
    assert shown is not None and shown["text"] == "812 of 1000 core-h left"
    assert shown["title"] == "printf (the site's balance command)"


def test_a_sites_balance_command_that_fails_is_said_in_the_dry_run_and_not_in_the_bar(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpc_magics.core.profiles import load_profile
    from hpc_magics.core.resources import ResourceRequest
    from hpc_magics.scheduler.allocation import allocation_lines

    # one door for the site's tool: the status bar shows nothing, the dry run says why
    (tmp_path / "fails.toml").write_text(
        'extends = "lab"\nbalance_command = ["sh", "-c", "echo no such project >&2; exit 3"]\n')
    (tmp_path / "absent.toml").write_text(
        'extends = "lab"\nbalance_command = ["/nonexistent/projinfo"]\n')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(tmp_path))
    assert read_allocation("hpcproj", "fails", 0.1, timeout_s=20) is None
    assert allocation_lines(ResourceRequest(), load_profile("fails")) == [
        "allocation (sh): no such project"]
    assert read_allocation("hpcproj", "absent", 0.1, timeout_s=20) is None
    [line] = allocation_lines(ResourceRequest(), load_profile("absent"))
    assert line.startswith("allocation (/nonexistent/projinfo): could not run ("), line
