"""notebooks/multi-node.ipynb on the real two-node cluster: 2 nodes x 2 tasks train with
torch.distributed (gloo, DistributedDataParallel) and end with identical weights."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import execute

pytestmark = pytest.mark.slurm


@pytest.mark.slow  # four tasks import torch on a shared 2-core machine
@pytest.mark.timeout(420)
def test_multi_node_notebook(student_folder: Path, slurm_cluster: Any) -> None:
    # the notebook teaches torch.distributed; tests/magics/test_scale.py does its ranks
    # without torch
    pytest.importorskip("torch", reason="torch is an optional extra (pyproject: torch)")
    ran = execute("multi-node.ipynb", student_folder, timeout=360)
    # the real cluster's request is spelled out, then the course one replaces it
    narval = ran.output_of("%hpc_resources --profile narval")
    assert "#SBATCH --nodes=2" in narval and "#SBATCH --ntasks-per-node=4" in narval
    assert "a100:4" in narval and "GPU-h" in narval
    lab = ran.output_of("%hpc_resources --reset --profile lab")
    assert "#SBATCH --partition=debug" in lab and "#SBATCH --nodes=2" in lab
    assert "a100" not in lab.lower() and "def-smith" not in lab  # --reset forgot Narval's
    assert "srun" in ran.output_of("%%sbatch --dry-run")
    # every rank reported where it ran: 2 per node, local ranks 0 and 1, one meeting point
    ranks = re.findall(r"rank (\d)  local rank (\d)  of (\d)  on (\w+)  (\d+) rows  "
                       r"meeting at (\S+)", ran.output_of("for seen in where"))
    assert [int(r[0]) for r in ranks] == [0, 1, 2, 3]
    assert {r[2] for r in ranks} == {"4"} and {r[4] for r in ranks} == {"256"}
    assert sorted((r[3], r[1]) for r in ranks) == [("c1", "0"), ("c1", "1"),
                                                   ("c2", "0"), ("c2", "1")]
    assert len({r[5] for r in ranks}) == 1
    # rank 0's output came back; rank 3's own log says the same mean loss
    job_output = ran.output_of("%%sbatch --wait")
    mine = re.search(r"rank 0 \(local rank 0 on c\d\): 256 rows, .* mean over all ranks "
                     r"(\d\.\d+)", job_output)
    assert mine and "rank 1 (" not in job_output, job_output
    rank3 = ran.output_of("import hpc_magics")
    assert re.search(rf"rank 3 \(local rank \d on c\d\): 256 rows, .*{mine[1]}", rank3), rank3
    # the all-reduce kept the copies in step, equal to one process on all the data
    check = ran.output_of("identical = ")
    assert "all 4 ranks end with identical weights: True" in check, check
    difference = float(re.search(r"all the data: (\S+)", check)[1])  # type: ignore[index]
    assert difference < 1e-4
    assert "model came back from rank 0 trained: True" in check
