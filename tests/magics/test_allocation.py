"""What is left of the allocation, beside the request (issue 20), on the real test cluster:
its accounts have no GrpTRESMins limit (setting one would change the accounting every helper
and test shares), so the limit arithmetic is checked on sshare's line format, and a site's
own balance command is a real script named by the profile."""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.core.profiles import PACKAGED_DIR
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.scheduler.allocation import describe, parse_sshare


def test_the_dry_run_says_what_slurm_knows_of_the_allocation(
        shell: Any, slurm_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--dry-run --profile lab --backend slurm -t 5", "x = 1")
    out = capsys.readouterr().out
    assert re.search(r"^# allocation: Slurm sets no limit for account \S+ "
                     r"\(\d+\.\d billing-hours used\)$", out, re.M), out


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
