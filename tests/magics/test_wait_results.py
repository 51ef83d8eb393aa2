"""``%%sbatch --wait`` brings the results in the moment the job folder proves the cell is
over (its result file), not when the scheduler next says the job ended."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler.watcher import watcher

# The cell is over and its results written; the job's interpreter then runs its exit
# handlers, so the job stays RUNNING for a while after the result file lands.
LINGERING = "import atexit, time\natexit.register(time.sleep, 20)\nanswer = 6 * 7"


@pytest.fixture
def slurm_shell(shell: Any, slurm_cluster: Any) -> Any:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    return shell


@pytest.mark.timeout(120)
def test_wait_fetches_when_the_result_file_lands_before_the_job_ends(
        slurm_shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    slurm_shell.run_cell_magic("sbatch", "--wait", LINGERING)
    assert slurm_shell.user_ns["answer"] == 42
    assert "answer" in capsys.readouterr().out
    magics = slurm_shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    try:
        # the job itself is still running its exit handler: the folder, not Slurm, ended
        # the wait
        assert handle.refresh(max_age_s=0) == "RUNNING"
    finally:
        watcher().cancel(handle.job_id)


@pytest.mark.timeout(120)
def test_a_job_with_several_tasks_is_waited_for_to_the_end(slurm_shell: Any) -> None:
    """Task 0's results may land while other tasks still run: --wait waits for the job."""
    slurm_shell.run_cell_magic("sbatch", "--wait -N 2 --ntasks-per-node 1",
                               "import atexit, os, time\n"
                               "if os.environ['SLURM_PROCID'] != '0':\n"
                               "    atexit.register(time.sleep, 3)\n"
                               "answer = 1")
    magics = slurm_shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert slurm_shell.user_ns["answer"] == 1
    assert handle.status.final


@pytest.mark.timeout(180)
def test_a_sweep_ships_a_big_array_once_beside_its_payload(slurm_shell: Any) -> None:
    """A sweep pickles its payload once for all tasks: big arrays go beside it as files."""
    slurm_shell.run_cell("import numpy as np\nbig = np.arange(500_000, dtype=float)")
    slurm_shell.run_cell_magic("sbatch", "--sweep x=1,2 --wait", "total = float(big.sum()) * x")
    magics = slurm_shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert (handle.folder.path / "buffers" / "0.bin").stat().st_size == 4_000_000
    table = handle.table()
    expected = float(np.arange(500_000, dtype=float).sum())
    assert sorted(table["total"]) == [expected, 2 * expected]


@pytest.mark.timeout(120)
def test_wait_fetches_without_a_squeue_of_its_own(slurm_shell: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the wait sees the result file, the cell's results come in with the state the
    user's shared queue view says: no squeue is run for this one job (one per interval for
    all)."""
    queue = watcher().queue
    real_run = queue.runner
    results_seen = threading.Event()  # by the wait itself, in the cell's thread
    real_has_results = JobFolder.has_results
    after_results: list[str] = []

    def seen(folder: JobFolder) -> bool:
        found = real_has_results(folder)
        if found and threading.current_thread() is threading.main_thread():
            results_seen.set()
        return found

    def counted(argv: Any, **kwargs: Any) -> Any:
        if results_seen.is_set():
            after_results.append(" ".join(str(word) for word in argv[:2]))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(JobFolder, "has_results", seen)
    monkeypatch.setattr(queue, "runner", counted)
    # This process's own view: the other test workers' cancels (same user) invalidate the
    # user's shared one, and the next look after that rightly asks squeue.
    monkeypatch.setattr(queue, "cache_dir", tmp_path)
    # An interval no run reaches: a squeue after the results is then the wait's own, never
    # the view's refresh at its interval (the widget's monitor thread asks at that interval).
    monkeypatch.setattr(queue, "interval_s", 3600.0)
    slurm_shell.run_cell_magic("sbatch", "--wait --name own-squeue", "answer = 6 * 7")
    assert slurm_shell.user_ns["answer"] == 42
    assert results_seen.is_set()
    assert after_results == []


@pytest.mark.timeout(120)
def test_a_pending_view_older_than_the_results_shows_the_job_running(
        slurm_shell: Any) -> None:
    """The result file proves the cell ran: a queue view taken before it was written that
    still lists the job as pending says nothing of now (the job shows running, no squeue
    asked for it); a view taken after it says what Slurm says. A held job never runs, so
    its result file is written here, as the node writes it (a job that ran and is pending
    in a stale view cannot be made on demand)."""
    from hpc_magics.jobfolder.files import CellResult, write_results

    slurm_shell.run_cell_magic("sbatch", "--name held", "#SBATCH --hold\nx = 1")
    magics = slurm_shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    try:
        assert handle.refresh(max_age_s=0) == "PENDING"
        write_results(handle.folder.path, CellResult(hostname="node"), handle.job_id, 0.1)
        assert handle.refresh(max_age_s=600) == "RUNNING"
        assert handle.refresh(max_age_s=0) == "PENDING"
    finally:
        watcher().cancel(handle.job_id)
