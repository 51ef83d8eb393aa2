"""What is left of the allocation, beside the request (issue 20), on the real test cluster:
the shared accounts have no GrpTRESMins limit, so a throwaway account gets one (made and
removed as root by scripts/slurm-cluster test-assoc; nobody else's accounting changes); the
limit arithmetic is also checked on sshare's line format, and a site's own balance command
is a real script named by the profile."""

from __future__ import annotations

import getpass
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hpc_magics.core.profiles import PACKAGED_DIR
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.scheduler import limits
from hpc_magics.scheduler.allocation import describe, parse_sshare

if TYPE_CHECKING:  # fixture types only
    from conftest import ThrowawayAccount


def test_the_dry_run_says_what_slurm_knows_of_the_allocation(
        shell: Any, slurm_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--dry-run --profile lab --backend slurm -t 5", "x = 1")
    out = capsys.readouterr().out
    assert re.search(r"^# allocation: Slurm sets no limit for account \S+ "
                     r"\(\d+\.\d billing-hours used\)$", out, re.M), out


def test_a_limited_account_shows_what_is_left_and_warns_over_it(
        shell: Any, slurm_cluster: Any, throwaway_account: ThrowawayAccount,
        capsys: pytest.CaptureFixture[str]) -> None:
    # one billing-hour for the whole account; this user associated (validation asks)
    account = throwaway_account("hpcm_test_alloc", getpass.getuser(), "billing=60")
    limits.forget()  # sacctmgr's associations as they are now
    shell.run_cell_magic("sbatch", f"--dry-run --profile lab --backend slurm -A {account} -t 20",
                         "x = 1")
    out = capsys.readouterr().out
    assert f"# allocation: 1.0 of 1.0 billing-hours left for account {account}\n" in out
    assert "warning:" not in out  # 20 CPU-minutes fit in the hour
    # 2 nodes x 4 CPUs x 20 min = 160 CPU-minutes: over the hour, one warning line
    shell.run_cell_magic("sbatch", f"--dry-run --profile lab --backend slurm -A {account} "
                         "-t 20 -N 2 -c 4", "x = 1")
    out = capsys.readouterr().out
    assert f"# allocation: 1.0 of 1.0 billing-hours left for account {account}\n" in out
    assert re.findall(r"^.*warning: .*$", out, re.M) == [
        f"# warning: this job may use 2.7 billing-hours, more than the 1.0 left of account "
        f"{account}"], out


def test_a_limit_left_and_a_request_over_it() -> None:
    line = "proj||billing=600|cpu=12,mem=0,billing=540,gres/gpu=0\n proj|u1||billing=540\n"
    found = parse_sshare(line, "proj")
    assert found is not None and found.left_min == 60 and found.tres == "billing"
    request = ResourceRequest(profile="lab", time_s=3600, nodes=2, account="proj")
    assert describe(found, request) == [
        "allocation: 1.0 of 10.0 billing-hours left for account proj",
        "warning: this job may use 2.0 billing-hours, more than the 1.0 left of account proj"]
    assert describe(found, request.changed(time_s=600)) == [
        "allocation: 1.0 of 10.0 billing-hours left for account proj"]


def test_a_sites_own_balance_command(shell: Any, slurm_cluster: Any, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    tool = tmp_path / "projinfo"  # stands for a site's balance tool (the test cluster has none)
    tool.write_text("#!/bin/sh\necho 'project p1: 3.0 node-hours left'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    lab = (PACKAGED_DIR / "lab.toml").read_text()
    (profiles / "lab.toml").write_text(f'balance_command = ["{tool}"]\n{lab}')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(profiles))
    shell.run_cell_magic("sbatch", "--dry-run --profile lab --backend slurm -t 5", "x = 1")
    assert f"# allocation ({tool}): project p1: 3.0 node-hours left\n" in capsys.readouterr().out
