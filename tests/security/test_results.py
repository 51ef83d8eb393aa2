"""A result file the user does not own, or others may write, is never unpickled: not by
%hpc_fetch, a handle, the widget's Fetch button, %hpc_jobs or the watcher.

The file is planted by the other test user and, if unpickled, would create a marker
file: the marker must never appear.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import hpc_magics
from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.core.resources import ResourceRequest

from .conftest import Intruder

pytestmark = [pytest.mark.timeout(180), pytest.mark.slurm]


class Planted:
    """Unpickling it runs a command: what a foreign result file could do."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (self.command,)


@pytest.fixture
def finished_job(shared_folder: Path, slurm_cluster: object) -> Iterator[tuple[Any, Any]]:
    """A real finished %%sbatch job of ours, in a jobs folder under the shared folder."""
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    saved_dir, saved_request = magics.jobs_dir, magics.request
    magics.jobs_dir = str(shared_folder / "hpc_jobs")
    magics.request = ResourceRequest(profile="lab", backend="slurm", time_s=300)
    magics.handles.clear()
    ip.run_cell_magic("sbatch", "--wait --name planted", "answer = 42")
    handle = magics.handles[magics.last_job]
    ip.user_ns.pop("answer", None)
    magics.handles.clear()  # as after a kernel restart: everything comes from the folder
    yield ip, handle
    magics.jobs_dir, magics.request = saved_dir, saved_request


def _plant(handle: Any, intruder: Intruder, how: str, marker: Path) -> None:
    """Replace the job's result file the way ``how`` says."""
    results = handle.folder.results_path
    payload = pickle.dumps(Planted(f"touch {marker}"))
    results.unlink()
    if how == "owned by another user":
        # our folders opened for a moment (the careless part), then private again
        handle.folder.path.chmod(0o777)
        handle.folder.path.parent.chmod(0o711)
        intruder.run("python3", "-c", "import sys; open(sys.argv[1], 'wb').write("
                     "bytes.fromhex(sys.argv[2]))", str(results), payload.hex())
        handle.folder.path.chmod(0o700)
        handle.folder.path.parent.chmod(0o700)
    elif how == "writable by others":
        results.write_bytes(payload)
        results.chmod(0o666)
    else:  # a link to a file another user owns
        theirs = handle.folder.path.parent.parent / "their-results.pkl"
        intruder.run("python3", "-c", "import sys; open(sys.argv[1], 'wb').write("
                     "bytes.fromhex(sys.argv[2]))", str(theirs), payload.hex())
        results.symlink_to(theirs)


@pytest.mark.parametrize("how", ["owned by another user", "writable by others",
                                 "a link to another user's file"])
def test_foreign_results_are_never_unpickled(finished_job: tuple[Any, Any],
                                             intruder: Intruder, shared_folder: Path,
                                             how: str) -> None:
    ip, handle = finished_job
    marker = shared_folder / "unpickled"
    _plant(handle, intruder, how, marker)
    refusal = "belongs to hpcuser2" if how != "writable by others" else "writable by others"

    with pytest.raises(UsageError, match=refusal) as fetched:
        ip.run_line_magic("hpc_fetch", handle.job_id)
    assert "\n" not in str(fetched.value) and "refusing to load it" in str(fetched.value)
    ip.magics_manager.registry["HpcMagicsKernel"].handles.clear()
    with pytest.raises(HpcMagicsError, match=refusal):
        hpc_magics.job(handle.job_id).fetch()

    from hpc_magics.widgets.job import JobWidget

    widget = JobWidget(hpc_magics.job(handle.job_id))
    widget._fetch()  # the Fetch button
    assert "refusing to load it" in widget.message.value

    ip.run_line_magic("hpc_jobs", "")  # the watcher looks at the folder too
    hpc_magics.job(handle.job_id).refresh(max_age_s=0)
    assert "answer" not in ip.user_ns
    assert not marker.exists(), f"a result file {how} was unpickled"
