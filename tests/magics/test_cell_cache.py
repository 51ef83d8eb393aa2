"""``%%sbatch --cache`` on the real test cluster: an unchanged cell returns the earlier job's
result with no new job; a changed input or a changed source runs again."""

from __future__ import annotations

import re
from typing import Any

import pytest

CELL = "total = sum(values) * factor\nprint('computed on the node')\n"


def _send(shell: Any, cell: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--cache --wait", cell)
    captured = capsys.readouterr()
    return captured.out + captured.err


@pytest.mark.slurm
def test_a_cached_cell_returns_without_a_job_and_a_change_runs_again(
        shell: Any, slurm_cluster: Any, job_folders: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell("values = [1, 2, 3]\nfactor = 10")
    first = _send(shell, CELL, capsys)
    assert "cached" not in first and shell.user_ns["total"] == 60
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    first_job = magics.last_job
    assert len(job_folders(shell)) == 1

    shell.user_ns["total"] = None
    again = _send(shell, CELL, capsys)
    assert f"cached: result of job {first_job} from " in again
    assert "computed on the node" in again  # the earlier job's output, shown again
    assert shell.user_ns["total"] == 60
    assert len(job_folders(shell)) == 1  # no sbatch: no new job folder
    assert magics.last_job == first_job

    shell.run_cell("values.append(4)")  # a changed input
    changed_input = _send(shell, CELL, capsys)
    assert "cached" not in changed_input and shell.user_ns["total"] == 100
    assert len(job_folders(shell)) == 2

    changed_source = _send(shell, CELL.replace("* factor", "* factor + 1"), capsys)
    assert "cached" not in changed_source and shell.user_ns["total"] == 101
    assert len(job_folders(shell)) == 3
    assert len(set(re.findall(r"job (\d+)", changed_source))) >= 1


def test_the_key_is_the_environment_not_the_resources(tmp_path: Any) -> None:
    from hpc_magics.magics.cell_cache import cache_key
    from hpc_magics.shipping.packing import Payload

    folder = tmp_path / "cell-20250101-120000-abcd"
    script = ("#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --output={f}/%j.out\n"
              "module load python\n/opt/venv/bin/python -u -m hpc_magics.node.engine {f}\n")
    payload = Payload(code="y = x + 1", state=b"pickled x")

    def key(text: str, shipped: Payload = payload, where: Any = folder) -> str:
        return cache_key(shipped, text.format(f=where), where, "slurm", "lab")

    base = key(script)
    assert key(script.replace("00:05:00", "02:00:00")) == base  # resources: same result
    assert key(script, where=tmp_path / "cell-20250102-090000-ef01") == base  # a new folder
    assert key(script.replace("module load python", "module load python/3.12")) != base
    assert key(script.replace("/opt/venv", "/opt/other")) != base  # another interpreter
    assert key(script, Payload(code="y = x + 1", state=b"pickled x, changed")) != base
    assert key(script, Payload(code="y = x + 2", state=b"pickled x")) != base
