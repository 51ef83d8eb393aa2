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


def _counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """Calls of ``owner.name`` from here on, each running the real one."""
    calls: list[Any] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_submission_refuses_checks_loads_and_writes_each_thing_once(
        shell: Any, slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What each cell pays for: the refusal of a job for another cluster (preflight, not
    again in the door), its profile (looked up once), its meta.json (written before
    sbatch and once after it, not three times)."""
    from hpc_magics.core import profiles, validation
    from hpc_magics.jobfolder.folder import JobFolder

    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--name first", "x = 1")
    refusals = _counted(monkeypatch, validation, "not_yet")
    loads = _counted(monkeypatch, profiles, "load_profile")
    writes = _counted(monkeypatch, JobFolder, "write_meta")
    shell.run_cell_magic("sbatch", "--name again", "x = 2")
    assert (len(refusals), len(loads), len(writes)) == (1, 1, 2)
