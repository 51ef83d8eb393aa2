"""A ``%%sbatch --session`` cell whose session's job ends under it (scancel, a time limit)
ends in one line instead of waiting forever; the session is over and may start anew."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.kernel import session as sessions
from hpc_magics.scheduler import commands

pytestmark = pytest.mark.slurm


def test_a_cell_whose_session_job_was_cancelled_ends_in_one_line(shell: Any) -> None:
    name = f"gone{os.getpid()}"
    shell.run_line_magic("hpc_session", f"start {name} -t 5")
    session = sessions.get(name)
    job_id = session.job_id
    started = session.folder / "cell-started"  # the kernels' folder: on the shared home
    cell = f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(600)\n"
    said: list[BaseException] = []

    def run_cell() -> None:
        try:
            shell.run_cell_magic("sbatch", f"--session {name}", cell)
        except BaseException as error:  # what the notebook would show under the cell
            said.append(error)

    waiting = threading.Thread(target=run_cell, daemon=True)
    waiting.start()
    deadline = time.monotonic() + 60
    while not started.exists():  # the cell runs in the session now
        assert time.monotonic() < deadline and waiting.is_alive(), said
        time.sleep(0.2)
    assert commands.run(["scancel", job_id], timeout=30).ok
    waiting.join(120)
    assert not waiting.is_alive(), "the cell still waits for a session whose job is gone"
    [error] = said
    assert isinstance(error, UsageError)
    text = str(error)
    assert f"session {name}: its job {job_id} ended" in text and "\n" not in text, text
    with pytest.raises(UsageError, match=f"no session .{name}."):  # over, not half there
        shell.run_cell_magic("sbatch", f"--session {name}", "x = 1")
