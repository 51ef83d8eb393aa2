"""The job widget: live state, log tail, cancel — clicked like a user would, on real jobs."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.widgets.job import JobWidget
from hpc_magics.widgets.job_view import JobView


def test_view_model_decides_buttons() -> None:
    running = JobView("7", "train", "RUNNING", "slurm", "/x", False)
    assert running.can_cancel and not running.can_fetch and "RUNNING" in running.status_html()
    done = JobView("7", "train", "COMPLETED", "local", "/x", True)
    assert done.can_fetch and not done.can_cancel
    assert "local executor" in done.status_html() and "results fetched" in done.status_html()
    timeout = JobView("7", "<b>", "TIMEOUT", "slurm", "/x", False)
    assert "&lt;b&gt;" in timeout.status_html() and "#c62828" in timeout.status_html()


def test_the_second_line_links_the_log_and_folder_not_the_whole_path() -> None:
    home = str(Path.home())
    folder = f"{home}/work/hpc_jobs/train-1"
    view = JobView("7", "train", "RUNNING", "slurm", folder, False,
                   log=f"{folder}/7_0_log.out")
    second_line = view.status_html().split("<br>", 1)[1]
    links = re.findall(r"data-hpc-magics-open='(\w+)' data-path='([^']*)' title='([^']*)'>(\w+)<",
                       second_line)
    # as jupyter_server writes its root in the page: the home as ~
    assert links == [("log", "~/work/hpc_jobs/train-1/7_0_log.out",
                      f"{folder}/7_0_log.out", "log"),
                     ("folder", "~/work/hpc_jobs/train-1", folder, "folder")]
    assert re.sub(r"<[^>]+>", "", second_line) == "log · folder"
    elsewhere = JobView("7", "train", "PENDING", "slurm", "/scratch/p1/hpc_jobs/x", False)
    assert "data-path='/scratch/p1/hpc_jobs/x'" in elsewhere.status_html()


def test_an_estimated_start_on_another_day_says_the_day() -> None:
    """The job widget's estimated start had the hour only (``09:00`` for a start two days
    on); it is the clock ``%hpc_server`` shows: the date on another day."""
    now = time.mktime((2026, 11, 28, 12, 0, 0, 0, 0, -1))
    later = JobView("7", "train", "PENDING", "slurm", "/x", False, reason="Priority",
                    start_time=now + 2 * 86400 - 3 * 3600)
    assert "estimated start 2026-11-30 09:00 (in 1d21h)" in later.story(now)
    soon = JobView("7", "train", "PENDING", "slurm", "/x", False, start_time=now + 600)
    assert "estimated start 12:10 (in 10m)" in soon.story(now)


def test_widget_cancel_and_log_on_the_cluster(shell: Any, slurm_cluster: Any,
                                              sacct_state: Any) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "", "import time\nprint('started', flush=True)\n"
                                       "time.sleep(300)")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    widget = JobWidget(handle)
    sacct_state(handle.job_id, until={"RUNNING"}, timeout=30)
    deadline = time.monotonic() + 30
    while "RUNNING" not in widget.status.value and time.monotonic() < deadline:
        widget.refresh()
        time.sleep(0.5)
    assert "RUNNING" in widget.status.value and not widget.cancel_button.disabled
    deadline = time.monotonic() + 30
    while "started" not in handle.log() and time.monotonic() < deadline:
        time.sleep(0.5)
    widget.render()  # the live tail
    assert "started" in widget.log_view.value
    widget.cancel_button.click()  # asks first
    widget.confirm_yes.click()  # one look after scancel: it may still be ending
    assert sacct_state(handle.job_id, until={"CANCELLED"}) == "CANCELLED"
    deadline = time.monotonic() + 30
    while "CANCELLED" not in widget.status.value and time.monotonic() < deadline:
        widget.refresh()  # as the monitor does
        time.sleep(0.5)
    assert "CANCELLED" in widget.status.value and widget.cancel_button.disabled
    assert widget.get_state()["children"]  # a real widget model, as the front end sees it


@pytest.mark.timeout(120)
def test_widget_fetch_button_brings_results(shell: Any, cells: Any) -> None:
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local -t 5", cells.WORK)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    widget = JobWidget(handle)
    handle.wait(timeout=60)
    widget.render()
    assert not widget.fetch_button.disabled
    widget.fetch_button.click()
    assert shell.user_ns["summary"].total == 135.0
    assert "results fetched" in widget.status.value
    assert "summary" in widget.message.value and "sum on the node" in widget.message.value


def test_widget_shown_by_wait_ends_in_the_final_state(shell: Any, cells: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", cells.WORK)
    [widget] = [o for o in shown if isinstance(o, JobWidget)]
    assert "results fetched" in widget.status.value
    # --wait fetches as soon as the result file lands; the job may still be tidying up
    # then, and the widget's monitor shows its end (it refreshes every 5 s)
    deadline = time.monotonic() + 15
    while not ("FINISHED" in widget.status.value or "COMPLETED" in widget.status.value):
        assert time.monotonic() < deadline, widget.status.value
        time.sleep(0.2)
    assert "results fetched" in widget.status.value and widget.cancel_button.disabled
    # the widget shows the progress: no separate line left saying "RUNNING · 1s"
    assert not [o for o in shown if type(o).__name__ == "Pretty"]


@pytest.mark.timeout(120)
def test_fetch_wait_line_ends_in_the_final_state(shell: Any, cells: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a widget (%hpc_fetch --wait), the progress line ends saying how the job
    ended, never a stale "RUNNING · 1s"."""
    updates: list[str] = []

    class Shown:  # what IPython's display(..., display_id=True) returns, recording updates
        def update(self, value: Any) -> None:
            updates.append(value.data)

    monkeypatch.setattr("IPython.display.display",
                        lambda *objects, **options: Shown() if options.get("display_id")
                        else None)
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local -t 5", cells.WORK)
    shell.run_line_magic("hpc_fetch", "--wait")
    assert shell.user_ns["summary"].total == 135.0
    assert updates and re.fullmatch(r"job \d+: (COMPLETED|FINISHED)", updates[-1]), updates
