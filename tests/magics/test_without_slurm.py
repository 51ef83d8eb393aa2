"""A session without Slurm (the local executor): what getting-started.ipynb meets on a laptop.
%hpc_efficiency says there is no accounting instead of raising, so Run All goes on, and
``%hpc_resources --reset`` keeps HPC_MAGICS_BACKEND (it used to fall back to auto, which
picks Slurm wherever sbatch is installed)."""

from __future__ import annotations

from pathlib import Path
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


def test_all_is_this_notebooks_listing_and_more_a_local_job_included(
        shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``%hpc_jobs --all`` is the one listing with more of your jobs, not another listing:
    this notebook's jobs are in it (it used to read squeue and sacct only, so a local job
    of this notebook was missing from "every job of yours")."""
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "x = 1\n")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    job_id = magics.last_job
    state = magics.handles[job_id].wait(timeout=60)  # its process too, after the results
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here: a laptop
    capsys.readouterr()
    # the error's list of states offers FINISHED (submitit's word for a local job that
    # ended well): it finds the job the listing calls COMPLETED, as CD does
    for line in ("", "--all", f"--all --state {state}", "--state FINISHED", "--state CD"):
        shell.run_line_magic("hpc_jobs", line)
        rows = capsys.readouterr().out.splitlines()
        assert any(row.split()[:3] == [job_id, state, "cell"] for row in rows), rows
        assert not rows[-1].startswith("("), rows  # no Slurm here: nobody asked, no note


def test_job_takes_the_id_as_a_number_too(shell: Any) -> None:
    """``hpc_magics.job(12292)`` is the job the listing shows as 12292 (an int used to
    raise AttributeError from deep inside); other types are refused in one line."""
    import hpc_magics

    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "x = 1\n")
    job_id = shell.magics_manager.registry["HpcMagicsKernel"].last_job
    assert hpc_magics.job(int(job_id)).job_id == job_id
    for wrong in (12.0, [job_id], True):
        with pytest.raises(TypeError, match=r"job id .*: give it as 12345 or '12345'"):
            hpc_magics.job(wrong)  # type: ignore[arg-type]


def test_state_takes_what_squeue_takes_and_an_empty_filter_says_so(
        shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``%hpc_jobs --state BOGUS`` is refused, naming the states squeue takes (it used to
    list nothing and say the job folder was empty); a filter that keeps no job says which
    states it wanted and that the folder has others."""
    from IPython.core.error import UsageError

    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "x = 1\n")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    magics.handles[magics.last_job].wait(timeout=60)
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here: a laptop
    capsys.readouterr()
    with pytest.raises(UsageError, match=r"--state 'BOGUS' is not a job state: .*PENDING "
                                         r"\(PD\).*RUNNING \(R\).*REVOKED \(RV\).* or all$"):
        shell.run_line_magic("hpc_jobs", "--state R,BOGUS")
    for line in ("--state R,PD", "--state pd,cg,RV,requeue_hold"):
        shell.run_line_magic("hpc_jobs", line)
        said = capsys.readouterr().out
        assert "no jobs under" not in said
        wanted = line.split()[-1].upper()
        assert f"(no jobs in state {wanted}: 1 in other states)" in said
    shell.run_line_magic("hpc_jobs", "--state all")
    assert magics.last_job in capsys.readouterr().out


def test_a_local_jobs_segments_say_it_ran_here(shell: Any) -> None:
    """Segments are accounting's (sacct): a local job has none to ask, and that is no
    "try again later" (the line %hpc_efficiency says for it)."""
    from hpc_magics.core.errors import HpcMagicsError

    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "x = 1\n")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    with pytest.raises(HpcMagicsError) as refused:
        handle.segments()
    said = str(refused.value)
    assert f"job {handle.job_id} ran on this machine, not through Slurm" in said, said
    assert "try again" not in said and "\n" not in said, said


@pytest.mark.parametrize(("line", "named"), [
    ("-N 2 --ntasks-per-node 2", "--nodes 2, --ntasks-per-node 2"),
    ("--gpus-per-node 2 --mem 1M", "--mem 1M, --gpus-per-node 2"),
    ("-d afterok:99999999", "--dependency afterok:99999999"),
])
def test_a_local_job_names_the_requests_only_slurm_gives(
        shell: Any, capsys: pytest.CaptureFixture[str], line: str, named: str) -> None:
    """Tried out on a laptop, the cell runs (no refusal), but never silently as if it had
    its nodes, tasks, GPUs, memory limit or dependency: one line names them."""
    shell.run_cell_magic("sbatch", f"--backend local --wait -t 5 {line}", "x = 1\n")
    assert shell.user_ns["x"] == 1
    said = [row for row in capsys.readouterr().err.splitlines() if "Slurm only" in row]
    assert said == [f"[hpc_magics] runs on this machine as one process: {named} apply on "
                    "Slurm only"], said


def test_a_plain_local_job_says_nothing_of_slurm(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5 -N 1 -c 2", "x = 1\n")
    assert "Slurm only" not in capsys.readouterr().err


def test_a_local_rerun_names_what_only_slurm_gives_too(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``rerun(mem=...)`` of a local job goes through the same door as the cell: the memory
    it asks for is named as Slurm's only, as %%sbatch names it (it used to say nothing)."""
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "x = 1\n")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    first = magics.handles[magics.last_job]
    first.wait(timeout=60)
    capsys.readouterr()
    again = first.rerun(mem="2G")
    said = [row for row in capsys.readouterr().err.splitlines() if "Slurm only" in row]
    assert said == ["[hpc_magics] runs on this machine as one process: --mem 2G apply on "
                    "Slurm only"], said
    again.wait(timeout=60)
