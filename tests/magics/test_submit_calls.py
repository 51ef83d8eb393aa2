"""What one ``%%sbatch`` submission asks of Slurm: sbatch, and nothing else (issue 26).

The door's cost against plain ``sbatch --wrap`` is a benchmark row (bench_submit.py); this
keeps what that row depends on: the cluster's name, ``scontrol show config`` and the
partitions are asked once a process, never per submission. Every Slurm command goes
through ``commands.run``, counted here around the real one, on the real test cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands


def test_a_submission_after_the_first_runs_only_sbatch(
        shell: Any, slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--name first", "x = 1")  # asks what a process asks once
    asked: list[str] = []
    real_run = commands.run

    def counted(argv: Any, **kwargs: Any) -> commands.CommandResult:
        asked.append(" ".join(str(word) for word in argv[:3]))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(commands, "run", counted)
    for index in range(3):
        shell.run_cell_magic("sbatch", f"--name again-{index}", "x = 2")
    assert [Path(call.split()[0]).name for call in asked] == ["sbatch"] * 3, asked
