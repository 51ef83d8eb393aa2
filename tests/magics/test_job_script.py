"""What you see is what runs: ``--dry-run``, the job folder's ``job.sh`` and Slurm's copy of
the script are one and the same text (on the real test cluster)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.core.profiles import PACKAGED_DIR
from hpc_magics.jobfolder.folder import WOULD_BE_STAMP, WOULD_BE_TOKEN
from hpc_magics.scheduler import commands

CELL = """import os
inherited = {k: os.environ.get(k) for k in ("SLURM_PTY_PORT", "OMPI_COMM_WORLD_RANK")}
job_id_seen = os.environ["SLURM_JOB_ID"]
visible = os.environ.get("CUDA_VISIBLE_DEVICES")
"""
LEAKED = {"SLURM_JOB_ID": "999999", "SLURM_JOBID": "999999", "SLURM_MEM_PER_NODE": "999999",
          "SLURM_PTY_PORT": "leaked", "OMPI_COMM_WORLD_RANK": "7", "SLURM_NTASKS": "64"}
# (SBATCH_* are the user's own defaults, not leaks: tests/magics/test_slurm_defaults.py)


@pytest.fixture
def lab_login_shell(shell: Any, slurm_cluster: Any, tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> Any:
    """Profile ``lab`` with a login shebang (as sites that need ``module load`` have)."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    lab = (PACKAGED_DIR / "lab.toml").read_text()
    (profiles / "lab.toml").write_text(f'shebang = "#!/bin/bash -l"\n{lab}')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(profiles))
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    return shell


def _paths_aside(script: str) -> str:
    """The job folder's time stamp and random part, as the dry run spells them."""
    return re.sub(r"-\d{8}-\d{6}-[0-9a-f]{4}\b", f"-{WOULD_BE_STAMP}-{WOULD_BE_TOKEN}", script)


def test_dry_run_job_folder_and_slurm_hold_one_script(
        lab_login_shell: Any, job_folders: Any, sacct_state: Any,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    shell = lab_login_shell
    for key, value in LEAKED.items():  # what a Jupyter server inside a job leaks
        monkeypatch.setenv(key, value)
    kernel_environment = dict(os.environ)
    flags = "--name faithful --gpus-per-node v100:1"

    capsys.readouterr()
    shell.run_cell_magic("sbatch", f"--dry-run {flags}", CELL)
    printed = capsys.readouterr().out.splitlines(keepends=True)
    assert printed[0].startswith("# dry run: nothing submitted")
    assert printed[-1].startswith("# shipping nothing")  # the shipping summary
    sources = printed.index("# where the values come from:\n")
    dry_script = "".join(printed[1:sources])
    assert job_folders(shell) == []  # a dry run creates no job folder

    shell.run_cell_magic("sbatch", flags, CELL)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    submitted = (handle.folder.path / "job.sh").read_text()
    assert _paths_aside(submitted) == dry_script
    slurm_copy = commands.run(["scontrol", "write", "batch_script", handle.job_id, "-"],
                              timeout=20)
    assert slurm_copy.ok, slurm_copy.stderr
    assert slurm_copy.stdout == submitted
    shown = commands.run(["scontrol", "show", "job", "-dd", handle.job_id], timeout=20)
    assert f"Command={handle.folder.path / 'job.sh'}\n" in shown.stdout  # that very file
    assert os.environ == kernel_environment  # the kernel's environment was never touched

    assert submitted.startswith("#!/bin/bash -l\n")
    assert [line for line in submitted.splitlines() if line.startswith("#SBATCH --gres")] == [
        "#SBATCH --gres=gpu:v100:1"]
    assert "ntasks-per-node" not in submitted  # nothing the user did not ask for

    assert sacct_state(handle.job_id, until={"COMPLETED"}, timeout=60) == "COMPLETED"
    shell.run_line_magic("hpc_fetch", handle.job_id)
    assert shell.user_ns["job_id_seen"] == handle.job_id  # not the leaked 999999
    assert shell.user_ns["inherited"] == {"SLURM_PTY_PORT": None, "OMPI_COMM_WORLD_RANK": None}
    assert shell.user_ns["visible"] == "0"
