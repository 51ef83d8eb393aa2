"""A job for another cluster is refused in one line before anything is submitted, whether
``-M`` comes from the cell, the profile or the environment; naming the cluster one submits
from is harmless, and the cluster sbatch names in its answer is recorded (issue 26). On the
real test cluster (scripts/slurm-cluster)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.core.profiles import PACKAGED_DIR
from hpc_magics.scheduler import commands, job_index
from hpc_magics.scheduler.cluster import cluster_name


def jobs_named(name: str, since: float) -> list[str]:
    """What squeue and sacct know of jobs of this name since ``since``."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 1))
    answers = [commands.run(["squeue", "-h", "-n", name, "-o", "%i"], timeout=20),
               commands.run(["sacct", "-n", "-X", "-P", "-o", "JobID", "--name", name,
                             "-S", start], timeout=20)]
    return sorted({line for answer in answers for line in answer.stdout.split() if line})


def test_a_job_for_another_cluster_is_refused_before_anything_is_submitted(
        shell: Any, slurm_cluster: Any, job_folders: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    here = cluster_name()
    since = time.time()
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    with pytest.raises(UsageError) as refused:
        shell.run_cell_magic("sbatch", "--name other-cluster", "#SBATCH -M other\nx = 1")
    assert str(refused.value) == ("several clusters are not supported yet: remove -M other; "
                                  f"the job goes to {here}, the cluster you submit from")
    # a profile whose directives name it (a user's copy of the lab's)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "labelsewhere.toml").write_text(
        (PACKAGED_DIR / "lab.toml").read_text() + '\n[extra_directives]\nclusters = "other"\n')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(profiles))
    with pytest.raises(UsageError, match=r"not supported yet: remove --clusters=other;"):
        shell.run_cell_magic("sbatch", "--profile labelsewhere --name other-cluster", "x = 1")
    # the user's default in the environment
    monkeypatch.setenv("SBATCH_CLUSTERS", "other")
    with pytest.raises(UsageError, match=r"not supported yet: unset SBATCH_CLUSTERS \(it is "
                                         r"'other'\); the job goes to"):
        shell.run_cell_magic("sbatch", "--name other-cluster", "x = 1")
    assert job_folders(shell) == []
    time.sleep(2)  # sacct lags the scheduler by up to 1.5 s
    assert jobs_named("other-cluster", since) == []


def test_naming_this_cluster_submits_and_records_the_cluster_sbatch_answers(
        shell: Any, slurm_cluster: Any) -> None:
    here = cluster_name()
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--name this-cluster", f"#SBATCH -M {here}\n#SBATCH --hold\n"
                         "x = 1")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    try:
        assert handle.folder.meta()["cluster"] == here
        # its own folder's entry: the shared index may hold a local process of that number
        indexed = [e for e in job_index.entries(job_ids=[handle.job_id])
                   if e.folder == handle.folder.path.absolute()]
        assert [e.cluster for e in indexed] == [here]
    finally:
        commands.run(["scancel", handle.job_id], timeout=30)
