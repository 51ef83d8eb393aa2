"""A local job's id is its controller's pid, and on one machine pids and Slurm job ids share
one range: the one job index never takes a local process for the Slurm job of the same
number, nor the other way round (issue 26 item 2). A real local job and a real Slurm job on
the test cluster (scripts/slurm-cluster).

Picking a pid equal to a Slurm job's id is not feasible, so the Slurm job's number is made
equal: its submission is recorded again with the local job's pid through
``job_status.record_submission``, the product's own door (meta.json and the index entry), as
if sbatch had answered that number.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

import hpc_magics
from hpc_magics.scheduler import job_index
from hpc_magics.scheduler.cluster import cluster_name
from hpc_magics.scheduler.job_status import record_submission


def test_a_local_process_and_a_slurm_job_of_one_number_are_never_taken_for_each_other(
        shell: Any, slurm_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # this test's index
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "made_here = 'local'")
    pid = magics.last_job
    local, local_notebook = magics.handles[pid].folder.path.absolute(), magics.jobs_dir
    # a Slurm job from another notebook, then numbered as the local process is
    magics.jobs_dir = str(tmp_path / "other notebook")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--wait", "made_here = 'slurm'")
    slurm = magics.handles[magics.last_job].folder
    record_submission(slurm, pid, time.time(), cluster_name())
    assert [e.cluster for e in job_index.entries(job_ids=[pid])] == [None, cluster_name()]

    # squeue's and sacct's rows, the server, a Slurm kernel: a Slurm job id is a Slurm job's
    assert [f.path for f in job_index.folders_for(pid)] == [slurm.path.absolute()]
    assert [f.path for f in job_index.folders_for(pid, local=True)] == [local]

    # from each notebook, its own job (its widget showed that one)
    magics.handles.clear()
    assert hpc_magics.job(pid).folder.path == slurm.path
    magics.jobs_dir = local_notebook
    magics.handles.clear()
    assert hpc_magics.job(pid).ran_locally

    # from a third notebook the number alone names both: refused, the folder's name says which
    magics.jobs_dir = str(tmp_path / "third notebook")
    magics.handles.clear()
    with pytest.raises(UsageError, match=rf"^{pid} is both a Slurm job and a local process") \
            as refused:
        shell.run_line_magic("hpc_fetch", pid)
    assert local.name in str(refused.value) and slurm.path.name in str(refused.value)
    shell.run_line_magic("hpc_fetch", local.name)
    assert shell.user_ns["made_here"] == "local"
    assert hpc_magics.job(slurm.path.name).folder.path.absolute() == slurm.path.absolute()
