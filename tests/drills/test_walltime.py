"""Drill: the time limit ends a cell mid-way. Slurm says TIMEOUT, and what the cell had
printed and drawn by then is kept and shown."""

from __future__ import annotations

from typing import Any

import pytest

from hpc_magics.core.errors import JobFailed

from .conftest import Stopwatch, last_handle

# the job's own limit ends it: no daemon or node stops, so it runs beside other tests
pytestmark = [pytest.mark.drills, pytest.mark.no_outage, pytest.mark.slurm, pytest.mark.slow,
              pytest.mark.timeout(240)]

CELL = """#SBATCH --time=1
import time
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [3, 1, 2])
plt.title("drawn before the limit")
for step in range(1000):
    print(f"step {step} done", flush=True)
    time.sleep(1)
answer = "never reached"
"""


def test_a_walltime_kill_is_timeout_and_keeps_output_and_figures(
        drill_shell: Any, stopwatch: Stopwatch) -> None:
    drill_shell.run_cell_magic("sbatch", "", CELL)
    handle = last_handle(drill_shell)
    state = handle.wait(timeout=200)
    assert state == "TIMEOUT", f"job {handle.job_id} ended {state}, not TIMEOUT"
    assert stopwatch.quick("handle.state", lambda: handle.state) == "TIMEOUT"

    output = (handle.folder.path / "output.txt").read_text()
    assert "step 0 done" in output and "step 30 done" in output, output[-500:]
    figures = sorted((handle.folder.path / "figures").glob("*.png"))
    assert figures, f"no figure kept in {handle.folder.path}"

    with pytest.raises(JobFailed) as failed:
        stopwatch.quick("handle.fetch", lambda: handle.fetch(drill_shell.user_ns))
    message = str(failed.value)
    assert "time limit" in message and "-t" in message, message
    assert "answer" not in drill_shell.user_ns
