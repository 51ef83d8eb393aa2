"""Drill: a result file truncated (a node died while writing it, a quota hit) or
overwritten with garbage. Fetching says so in one line and points at the output; nothing
else breaks: the job list, the state and the widget still answer at once."""

from __future__ import annotations

import os
import pickle
from typing import Any

import pytest
from IPython.core.error import UsageError

from .conftest import Stopwatch, last_handle

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(180)]

CELL = "print('computed on the node')\nanswer = list(range(1000))"


def _damage(path: Any, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "empty":
        path.write_bytes(b"")
    else:  # a valid pickle, but not a result file
        path.write_bytes(pickle.dumps({"answer": "not from the job"}))


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty", "not a result file"])
def test_a_damaged_result_file_is_one_clear_line(drill_shell: Any, stopwatch: Stopwatch,
                                                 how: str) -> None:
    drill_shell.run_cell_magic("sbatch", "--wait", CELL)
    handle = last_handle(drill_shell)
    assert drill_shell.user_ns.pop("answer") == list(range(1000))
    # --wait returns when the results land; Slurm says COMPLETED a moment later
    assert handle.wait(timeout=60) == "COMPLETED"
    _damage(handle.folder.results_path, how)
    drill_shell.ex("import hpc_magics")

    with pytest.raises(UsageError) as fetched:
        stopwatch.quick("%hpc_fetch", lambda: drill_shell.run_line_magic(
            "hpc_fetch", handle.job_id))
    message = str(fetched.value)
    assert "\n" not in message and str(handle.folder.results_path) in message, message
    if how == "not a result file":
        assert "is not an hpc_magics result file" in message
    else:
        assert "is damaged" in message and "run the cell again" in message, message
    assert "answer" not in drill_shell.user_ns

    # the rest still answers, and the job's state stays what Slurm said
    stopwatch.quick("%hpc_jobs", lambda: drill_shell.run_line_magic("hpc_jobs", ""))
    assert stopwatch.quick("handle.state", lambda: handle.state) == "COMPLETED"
    from hpc_magics.widgets.job import JobWidget

    widget = JobWidget(handle)
    stopwatch.quick("widget Fetch", widget._fetch)
    assert "damaged" in widget.message.value or "not an hpc_magics" in widget.message.value
    # the output is still there
    assert "computed on the node" in (handle.folder.path / "output.txt").read_text()
