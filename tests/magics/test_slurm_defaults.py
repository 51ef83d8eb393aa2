"""The user's Slurm defaults reach the job, a surrounding job's leaks do not, and a foreign
profile is checked statically (issue 20), on the real test cluster (scripts/slurm-cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.scheduler import commands
from hpc_magics.scheduler.queue import JobQueue
from hpc_magics.scheduler.watcher import Watcher


def last_handle(shell: Any) -> Any:
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    return magics.handles[magics.last_job]


def test_dry_run_says_where_each_value_comes_from(
        shell: Any, slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SBATCH_ACCOUNT", "envproj")
    monkeypatch.setenv("SBATCH_COMMENT", "from-my-bashrc")
    monkeypatch.setenv("SBATCH_TIMELIMIT", "0:07:00")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--dry-run -p debug", "x = 1")
    out = capsys.readouterr().out
    assert "#SBATCH --account=envproj" in out  # the environment's default, made visible
    assert "#SBATCH --time=00:05:00" in out  # %hpc_resources beats the environment
    assert "#   --account: environment (SBATCH_ACCOUNT)" in out
    assert "#   --partition: cell" in out
    assert "#   --time: %hpc_resources" in out
    assert "# reach sbatch from the environment: SBATCH_COMMENT" in out
    assert "# give way to the script's own lines: SBATCH_ACCOUNT, SBATCH_TIMELIMIT" in out


def test_a_foreign_profile_gets_static_checks_only(
        shell: Any, slurm_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--dry-run --profile daint -A g123 -p normal -t 10", "x = 1")
    captured = capsys.readouterr()
    assert "#SBATCH --partition=normal" in captured.out
    assert ("profile daint describes daint, alps-daint, not this cluster (lab): static "
            "checks only") in captured.err
    # a profile for any cluster (generic) is live by default: scontrol refuses the partition
    with pytest.raises(UsageError, match="partition 'nosuch' does not exist on this cluster"):
        shell.run_cell_magic("sbatch", "--dry-run --profile generic -p nosuch -t 5", "x = 1")


def _scontrol(job_id: str) -> str:
    return commands.run(["scontrol", "show", "job", job_id], timeout=20).stdout


def test_users_default_reaches_the_job_and_leaks_do_not(
        shell: Any, slurm_cluster: Any, sacct_state: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Slurm 22.05's sbatch reads no SBATCH_COMMENT (later releases do): SBATCH_DELAY_BOOT is
    # another default the product never sets, and scontrol shows it
    monkeypatch.setenv("SBATCH_DELAY_BOOT", "7")
    # the user's own setting for what commands print travels to the job, as all theirs
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    # what a notebook server running inside job 999999 would hand to its kernel
    monkeypatch.setenv("SLURM_JOB_ID", "999999")
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "1")
    monkeypatch.setenv("SLURM_NTASKS", "7")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--wait --name defaults", "import os\n"
                         "seen = {k: os.environ.get(k) for k in "
                         "('SLURM_JOB_ID', 'SLURM_MEM_PER_NODE', 'SLURM_NTASKS', "
                         "'SLURM_TIME_FORMAT')}")
    handle = last_handle(shell)
    assert "DelayBoot=00:07:00" in _scontrol(handle.job_id)
    seen = shell.user_ns["seen"]
    assert seen["SLURM_JOB_ID"] == handle.job_id  # the job's own id, not the leaked one
    assert seen["SLURM_MEM_PER_NODE"] != "1"  # the job's memory is its own
    assert seen["SLURM_NTASKS"] == "1"
    assert seen["SLURM_TIME_FORMAT"] == "relative"
    assert sacct_state(handle.job_id, until={"COMPLETED"}, timeout=20) == "COMPLETED"


def test_hpc_resources_shows_and_costs_the_environments_defaults(
        shell: Any, slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SBATCH_TIMELIMIT", "2:00:00")
    monkeypatch.setenv("SBATCH_ACCOUNT", "envproj")
    view = shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -N 2")
    assert "#SBATCH --account=envproj" in view.lines
    assert "#SBATCH --time=02:00:00" in view.lines
    assert view.cost.startswith("≈ 4 node-h")  # 2 nodes x the environment's 2 h
    # validation reads the same default: 2 h is over the debug partition's 20 min
    assert "time 02:00:00 exceeds the 00:20:00 limit of partition 'debug'" in repr(view)
    # the session keeps only what was set in it: the environment is read again each time
    assert shell.magics_manager.registry["HpcMagicsKernel"].request.account is None


def test_the_users_print_settings_never_reach_what_the_watcher_reads(
        shell: Any, slurm_cluster: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``SLURM_TIME_FORMAT``, ``SQUEUE_*`` and ``SACCT_*`` change what squeue and sacct print
    and list (``SQUEUE_STATES=RUNNING`` hides every pending job): the watcher's calls go
    without them, and still read a held job's state and submit time."""
    for name, value in {"SLURM_TIME_FORMAT": "relative", "SQUEUE_STATES": "RUNNING",
                        "SQUEUE_FORMAT": "%i %T", "SQUEUE_SORT": "-V",
                        "SACCT_FORMAT": "JobID,State"}.items():
        monkeypatch.setenv(name, value)
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--name held", "#SBATCH --hold\nx = 1")
    handle = last_handle(shell)
    try:
        queue = JobQueue(cache_dir=tmp_path)
        status = Watcher(queue).poll([handle.folder], max_age_s=0)[handle.folder.path]
        assert status.state == "PENDING"
        job = queue.view(max_age_s=0).find(handle.job_id)
        assert job is not None and job.state == "PENDING" and job.submit_time is not None
        meta = handle.folder.meta()  # Slurm keeps whole seconds
        assert int(meta["submitted_at"]) <= job.submit_time <= meta["submit_returned_at"]
    finally:
        commands.run(["scancel", handle.job_id], timeout=30)
