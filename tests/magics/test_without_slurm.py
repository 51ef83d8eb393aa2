"""A session without Slurm (the local executor): what getting-started.ipynb meets on a laptop.
%hpc_efficiency says there is no accounting instead of raising, so Run All goes on, and
``%hpc_resources --reset`` keeps HPC_MAGICS_BACKEND (it used to fall back to auto, which
picks Slurm wherever sbatch is installed)."""

from __future__ import annotations

from typing import Any

import pytest


def test_a_local_job_has_no_efficiency_and_says_so(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "answer = 6 * 7\n")
    assert shell.user_ns["answer"] == 42
    job_id = shell.magics_manager.registry["HpcMagicsKernel"].last_job
    capsys.readouterr()
    shell.run_line_magic("hpc_efficiency", "")
    said = capsys.readouterr().out
    assert f"job {job_id} ran on this machine, not through Slurm" in said
    assert "no accounting" in said


def test_reset_goes_back_to_the_backend_the_session_started_with(
        shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    monkeypatch.setenv("HPC_MAGICS_BACKEND", "local")
    shell.run_line_magic("hpc_resources", "--backend slurm -t 5")
    assert magics.request.backend == "slurm"
    shell.run_line_magic("hpc_resources", "--reset -t 5")
    assert magics.request.backend == "local"
    shell.run_cell_magic("sbatch", "--wait", "where = 'here'\n")
    assert shell.user_ns["where"] == "here"
    assert magics.handles[magics.last_job].ran_locally
