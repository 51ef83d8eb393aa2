"""A sweep's efficiency figures, on the real test cluster: its folder has no state of its own
(its tasks have), so ``%hpc_efficiency`` and the job widget ask accounting per task, each
point's latest attempt (a retried point: the retry's task)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

CELL = """
import os
if x == 2 and not os.path.exists(flag):
    open(flag, "w").close()
    raise RuntimeError("first try of 2")
value = x * 10
"""


@pytest.mark.timeout(300)
def test_efficiency_of_a_retried_sweep_per_point(shell: Any, slurm_cluster: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from hpc_magics.magics.widget_monitor import MONITOR
    from hpc_magics.scheduler import watcher
    from hpc_magics.widgets.job import JobWidget

    # our own sacct cache and watcher: what other processes of this user asked stays theirs
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("HPC_MAGICS_POLL_INTERVAL", "1")
    monkeypatch.setattr(watcher, "_WATCHER", None)
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.user_ns["flag"] = str(tmp_path / "two-failed-once")
    shell.run_cell_magic("sbatch", "--sweep x=1,2 --name eff --wait", CELL)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert handle.failed_tasks() == [1]
    retry_id = handle.rerun().array_ids()[-1]
    assert handle.wait(timeout=120) == "COMPLETED"
    capsys.readouterr()

    shell.run_line_magic("hpc_efficiency", "")
    report = capsys.readouterr().out
    assert [line for line in report.splitlines() if line.startswith("task ")] == \
        [f"task {handle.job_id}_0:", f"task {retry_id}_0:"], report
    assert report.count("  state COMPLETED") == 2 and "FAILED" not in report

    # the widget under the cell asks the same way, in the monitor's one batched round
    widget = JobWidget(handle)
    deadline = time.monotonic() + 30
    while widget.usage is None and time.monotonic() < deadline:
        MONITOR.tick([widget])
        time.sleep(1)
    assert widget.usage is not None, widget.usage_note
    assert sorted(u.job_id for u in widget.usage) == [f"{handle.job_id}_0", f"{retry_id}_0"]
    # the widget's report: %hpc_efficiency's, the summary, then each point's latest attempt
    shown = widget.efficiency.value
    assert "2 tasks: 2 COMPLETED; CPU efficiency" in shown, shown
    assert f"task {handle.job_id}_0:" in shown and f"task {retry_id}_0:" in shown


@pytest.mark.timeout(300)
def test_efficiency_of_a_sweep_cancelled_halfway(shell: Any, slurm_cluster: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Tasks cancelled before they started have no record of their own (sacct lists them as
    one range, ``123_[2-3]``): the figures of those that ran, and how many never did."""
    from hpc_magics.scheduler import watcher

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("HPC_MAGICS_POLL_INTERVAL", "1")
    monkeypatch.setattr(watcher, "_WATCHER", None)
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--sweep x=1,2,3,4 --array-parallelism 1 --name halfway",
                         "import time\ntime.sleep(3)\nvalue = x")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    deadline = time.monotonic() + 120
    while handle.task_states(max_age_s=1.0)[0].state != "COMPLETED":
        assert time.monotonic() < deadline, handle.task_states(ask=False)
        time.sleep(0.5)
    handle.cancel()
    capsys.readouterr()

    shell.run_line_magic("hpc_efficiency", "")
    report = capsys.readouterr().out
    tasks = [line for line in report.splitlines() if line.startswith("task ")]
    assert tasks[0] == f"task {handle.job_id}_0:" and "  state COMPLETED" in report, report
    # each point once: on its own line, or in the record of those that never started
    covered = []
    for line in tasks:
        task = line.removeprefix(f"task {handle.job_id}_").rstrip(":")
        first, _, last = task.strip("[]").split("%")[0].partition("-")
        covered += range(int(first), int(last or first) + 1)
    assert covered == [0, 1, 2, 3], report
