"""Drill: Slurm says COMPLETED before the result file is visible (a network file system
shows new files seconds late). ``%hpc_fetch`` says so at once instead of blocking the
kernel; ``%hpc_fetch --wait`` waits for the file; nothing is lost.

The delay is made by hiding the result file the moment the job writes it and showing it
again later: the one fake here, since the test cluster's folders are local, not NFS.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from .conftest import Stopwatch, last_handle, sacct_state, wait_for

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(180)]

CELL = "import time\ntime.sleep(3)\nanswer = 'arrived late'"


class LateFiles:
    """Hides ``results.pkl`` as soon as it appears; ``show()`` puts it back."""

    def __init__(self, folder: Path) -> None:
        self.results = folder / "results.pkl"
        self.hidden = folder / ".results.pkl.not-visible-yet"
        self.caught = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._hide, daemon=True)
        self._thread.start()

    def _hide(self) -> None:
        while not self._stop.is_set():
            if self.results.exists():
                self.results.rename(self.hidden)
                self.caught.set()
                return
            time.sleep(0.005)

    def show(self) -> None:
        self._stop.set()
        if self.hidden.exists():
            self.hidden.rename(self.results)


def test_results_appearing_late(drill_shell: Any, stopwatch: Stopwatch) -> None:
    drill_shell.run_cell_magic("sbatch", "", CELL)
    handle = last_handle(drill_shell)
    late = LateFiles(handle.folder.path)
    try:
        wait_for(late.caught.is_set, 60, "the job writing its results")
        wait_for(lambda: sacct_state(handle.job_id) == "COMPLETED", 30, "sacct COMPLETED")
        # the watcher's queue view is shared for an interval: let it see the end too
        wait_for(lambda: handle.refresh(max_age_s=0) == "COMPLETED", 30, "COMPLETED seen")
        with pytest.raises(UsageError) as early:
            stopwatch.quick("%hpc_fetch", lambda: drill_shell.run_line_magic(
                "hpc_fetch", handle.job_id))
        message = str(early.value)
        assert "COMPLETED, but its results are not visible" in message, message
        assert f"%hpc_fetch {handle.job_id} again" in message and "\n" not in message
        assert "answer" not in drill_shell.user_ns
        assert stopwatch.quick("handle.state", lambda: handle.refresh(max_age_s=0)) \
            == "COMPLETED"

        threading.Timer(3.0, late.show).start()  # the file system catches up
        started = time.monotonic()
        drill_shell.run_line_magic("hpc_fetch", f"{handle.job_id} --wait")
        assert 2.0 < time.monotonic() - started < 30
        assert drill_shell.user_ns["answer"] == "arrived late"
    finally:
        late.show()
