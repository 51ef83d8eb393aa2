"""%hpc_efficiency on a job that ran through the local executor (no Slurm): a line saying
there is no accounting, not an error, so a notebook's Run All goes on (getting-started.ipynb
runs top to bottom on a laptop)."""

from __future__ import annotations

from typing import Any

import pytest


def test_a_local_job_has_no_efficiency_and_says_so(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "answer = 6 * 7\n")
    assert shell.user_ns["answer"] == 42
    job_id = shell.magics_manager.registry["HpcMagics"].last_job
    capsys.readouterr()
    shell.run_line_magic("hpc_efficiency", "")
    said = capsys.readouterr().out
    assert f"job {job_id} ran on this machine, not through Slurm" in said
    assert "no accounting" in said
