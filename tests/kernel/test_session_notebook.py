"""A session in a notebook run by a real Jupyter kernel (nbclient), on the test cluster: the
widget ``%hpc_session start`` displays is a real ipywidgets model in the notebook's widget
state, showing the session's job running on its node with its time left; the widget's Stop
ends the session; ``%hpc_jobs`` lists the session with its time left and cost so far while
it runs.

The Stop button is pressed from a cell (its ``click()`` runs the same handler a front end's
click message runs): nbclient has no front end to click with. The browser side of these
widgets is the labextension's tests."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from .conftest import squeue_ids

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(400)]

WAIT_FOR = """
import time
from hpc_magics.magics.widget_monitor import MONITOR
[widget] = [w for w in MONITOR._widgets if getattr(w, "session", None) == {name!r}]
deadline = time.monotonic() + 60
while not ({check}) and time.monotonic() < deadline:
    time.sleep(0.5)  # the widgets' monitor thread updates the widget meanwhile
print("WIDGET", widget.status.value, "|", widget.story.value)
"""


def widget_texts(notebook: Any, cell: Any) -> str:
    """The texts and labels of the notebook's widget models (nbclient keeps the widgets'
    state in the notebook's metadata, as a front end receives it); the cell must have
    displayed one of them. The notebook shows one widget: the session's."""
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for o in cell.outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views and all(view in state for view in views), views
    return "\n".join(str(model["state"][key]) for model in state.values()
                     for key in ("value", "description") if model["state"].get(key))


def text_of(cell: Any) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "")
                   for o in cell.outputs)


def test_a_session_in_a_real_notebook_kernel_shows_its_widget_and_stops_from_it(
        slurm_cluster: object, provisioner_registered: None, tmp_path: Path) -> None:
    name = f"nb{os.getpid()}"
    running = "'RUNNING' in widget.status.value and 'left' in widget.story.value"
    ended = "'COMPLETED' in widget.status.value or 'CANCELLED' in widget.status.value"
    sources = [
        "%load_ext hpc_magics\n%hpc_resources --profile lab --backend slurm",
        f"%hpc_session start {name} -t 5",
        WAIT_FOR.format(name=name, check=running),
        # quiet longer than LOOK_EVERY_S: the session's job is looked at from a real kernel
        f"%%sbatch --session {name}\nimport time\ntime.sleep(5)\nanswer = 6 * 7",
        "print('ANSWER', answer)\n%hpc_jobs",
        "widget.cancel_button.click()\nwidget.confirm_yes.click()",
        WAIT_FOR.format(name=name, check=ended),
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    env = {**os.environ, "HPC_MAGICS_JOBS_DIR": str(tmp_path / "hpc_jobs")}
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    cells = notebook.cells

    shown = widget_texts(notebook, cells[1])  # the widget, as the front end's state has it
    assert f"session {name}" in shown and "Stop session" in shown, shown
    job_id = text_of(cells[1]).split("job ")[1].split()[0]
    assert f"job <code>{job_id}</code>" in shown, shown

    running_line = text_of(cells[2])
    assert "RUNNING" in running_line and "running on c" in running_line, running_line
    assert " left" in running_line and "of 5m" in running_line, running_line

    assert f"[hpc_magics] session {name}: job {job_id} on " in text_of(cells[3])
    listing = text_of(cells[4])
    assert "ANSWER 42" in listing
    row = next(line.split() for line in listing.splitlines()
               if line.split()[:1] == [job_id])
    assert row[1:3] == ["RUNNING", "session"] and row[-1] == f"kernel-session-{name}", row
    assert float(row[6]) > 0 and row[7] == "core-h", row  # cost so far, by the lab profile
    assert "\nallocation: " in listing  # what is left of the account, the session counted

    ended_line = text_of(cells[6])
    assert "COMPLETED" in ended_line or "CANCELLED" in ended_line, ended_line
    assert "stopped: its kernel shut down" in widget_texts(notebook, cells[1])
    deadline = time.monotonic() + 15
    while squeue_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue_ids(job_id) == []
