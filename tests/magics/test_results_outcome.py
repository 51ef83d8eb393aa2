"""A cell's results and the small outcome file beside them: how a job ended is read from
``outcome.json`` (never by unpickling), and a cancel that comes while the results are
written waits until they are whole. (A sweep's damaged task: test_sweep.py.)"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.backends import get_backend
from hpc_magics.jobfolder.files import OUTCOME_FILE, RESULTS_FILE
from hpc_magics.jobfolder.folder import JobFolder


class Planted:
    """Unpickling it creates ``path``: a result file read to learn a state would show."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (open, (str(self.path), "w"))


def test_the_watcher_learns_how_a_cell_ended_unpickling_nothing(
        slurm_cluster: Any, tmp_path: Path) -> None:
    """A cell recorded on another cluster: only its folder can say how it ended. The
    watcher reads outcome.json; the result file (here one that would run code) stays
    unread until a fetch asks for the values."""
    from hpc_magics.handle import JobHandle

    folder = JobFolder.create(tmp_path / "jobs", "elsewhere")
    folder.write_meta({"name": "elsewhere", "backend": "slurm", "job_id": "778",
                       "cluster": "another-cluster"})
    marker = tmp_path / "unpickled"
    (folder.path / RESULTS_FILE).write_bytes(pickle.dumps(Planted(marker)))
    (folder.path / RESULTS_FILE).chmod(0o600)
    (folder.path / OUTCOME_FILE).write_text(
        '{"failed": true, "error_type": "ValueError", "error_message": "bad", '
        '"job_id": "778", "elapsed": 1.5}')
    handle = JobHandle("778", get_backend("slurm"), folder, "elsewhere")
    assert handle.refresh(max_age_s=0) == "FAILED" and handle.status.source == "results"
    assert not marker.exists(), "the watcher unpickled the results to learn a state"


SIGNALLED_MID_WRITE = '''
import os, signal

class SignalsWhilePickled:
    """Its results are being written when this process gets SIGTERM: a cancel, or the time
    limit, arriving at that very moment."""

    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        return (bytes, (b"x" * 50_000_000,))

big = SignalsWhilePickled()
'''


def _signalled_mid_write(shell: Any, options: str) -> None:
    shell.run_cell_magic("sbatch", options, SIGNALLED_MID_WRITE)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    handle.wait(timeout=150)
    outcome = handle.folder.outcome()
    assert outcome is not None and not outcome.failed
    values = handle.fetch({}, show=False)
    assert values["big"] == b"x" * 50_000_000
    log = handle.log(tail=50)
    assert "SIGTERM while the results are written" in log, log


@pytest.mark.timeout(180)
def test_a_sigterm_while_the_results_are_written_waits_until_they_are_whole(
        shell: Any) -> None:
    """A real local job: the cell is over, its 50 MB result is being pickled when SIGTERM
    comes. The job still ends (by that signal), and only after the results are whole."""
    _signalled_mid_write(shell, "--backend local -t 5")


@pytest.mark.timeout(180)
def test_on_the_cluster_too(shell: Any, slurm_cluster: Any) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    _signalled_mid_write(shell, "")
