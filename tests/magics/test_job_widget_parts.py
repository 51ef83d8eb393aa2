"""The job widget makes its parts when they have something to show (fewer ipywidget models
per %%sbatch cell, benchmarks/bench_submit.py), and still shows the same story: on real
local-backend jobs, clicked like a user would."""

from __future__ import annotations

import time
from typing import Any

import pytest
from ipywidgets.widgets.widget import _instances

from hpc_magics.jobfolder.live_stream import STREAM_FILE
from hpc_magics.widgets.job import ORDER, JobWidget, shared_looks
from hpc_magics.widgets.live_output import LiveOutput

MODELS_AT_SUBMIT = 6  # the box, status, story, Cancel, its layout and the buttons' row


def shown(part: Any) -> bool:
    return part.layout.display != "none"


def names_of(widget: JobWidget) -> list[str]:
    """The children's part names, top to bottom."""
    by_id = {id(part): name for name, part in widget._parts.items()}
    return [by_id[id(child)] for child in widget.children]


def submitted(shell: Any, body: str) -> Any:
    shell.run_cell_magic("sbatch", "--backend local -t 5", body)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    return magics.handles[magics.last_job]


def ended_with_its_log(shell: Any, body: str, live: bool = False) -> JobWidget:
    """A job that prints 'hello from the job' then runs ``body``, ended and its log written,
    and its widget rendered; ``live``: under the cell's live view, as a %%sbatch cell in a
    notebook leaves it."""
    handle = submitted(shell, f"print('hello from the job', flush=True)\n{body}")
    if live:
        handle.live = LiveOutput(handle.folder.path / STREAM_FILE, handle.folder.has_results)
    widget = JobWidget(handle)
    handle.wait(timeout=60)
    deadline = time.monotonic() + 10
    while "hello from the job" not in handle.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    widget.render()
    return widget


@pytest.mark.timeout(120)
def test_a_running_job_gets_status_story_and_cancel_only(shell: Any) -> None:
    handle = submitted(shell, "import time\ntime.sleep(60)")
    try:
        shared_looks()  # the kernel's first job widget makes them
        before = len(_instances)
        widget = JobWidget(handle)
        assert len(_instances) - before <= MODELS_AT_SUBMIT
        assert names_of(widget) == ["status", "story", "buttons"]
        assert list(widget._parts["buttons"].children) == [widget.cancel_button]
        assert shown(widget.cancel_button) and not widget.cancel_button.disabled
        # a part read before it has anything to show is made hidden, in its place
        assert not shown(widget.progress) and not shown(widget.gpu_plot)
        assert widget.fetch_button.disabled and not shown(widget.fetch_button)
        assert names_of(widget) == ["status", "story", "progress", "buttons", "gpu_plot"]
        assert list(widget._parts["buttons"].children) == [widget.cancel_button,
                                                           widget.fetch_button]
        widget.cancel_button.click()  # asks first: the confirmation is made then
        assert shown(widget.confirm) and handle.job_id in widget.confirm_text.value
        assert names_of(widget) == [n for n in ORDER if n in
                                    ("status", "story", "progress", "buttons", "confirm",
                                     "gpu_plot")]
        widget.confirm_no.click()
        assert not shown(widget.confirm)
    finally:
        handle.cancel()


@pytest.mark.timeout(120)
def test_an_ended_job_shows_fetch_and_its_log_and_fetches(shell: Any) -> None:
    widget = ended_with_its_log(shell, "answer = 42")
    assert shown(widget.fetch_button) and not widget.fetch_button.disabled
    assert not shown(widget.cancel_button) and widget.cancel_button.disabled
    assert "hello from the job" in widget.log_view.value and shown(widget.log_button)
    assert widget.log_button.description == "More"
    widget.log_button.click()
    assert widget.log_button.description == "Less"
    widget.fetch_button.click()
    assert shell.user_ns["answer"] == 42 and "answer" in widget.message.value
    assert names_of(widget)[:3] == ["status", "story", "buttons"]
    assert widget.get_state()["children"]  # a real widget model, as the front end sees it


@pytest.mark.timeout(120)
def test_under_the_cells_live_view_the_log_shows_only_on_more(shell: Any) -> None:
    """The live view shows the job's output in the cell: the widget's tail of the log
    showed every line a second time (seen in the browser)."""
    widget = ended_with_its_log(shell, "", live=True)
    assert "hello from the job" not in widget.log_view.value and shown(widget.log_button)
    widget.log_button.click()
    assert "hello from the job" in widget.log_view.value


def test_its_plain_text_names_the_job_without_walking_its_parts(shell: Any) -> None:
    """Every display of the widget makes its text/plain from repr: ipywidgets' walks every
    trait of every part (~3 ms of each submission), cut at 110 characters."""
    handle = submitted(shell, "x = 1")
    assert repr(JobWidget(handle)) == f"JobWidget(job {handle.job_id})"


def test_the_looks_are_one_per_kernel_and_made_again_once_closed() -> None:
    first = shared_looks()
    assert shared_looks() is first  # no model of its own a cell
    first[0].close()  # a user's ipywidgets.Widget.close_all() closes them too
    again = shared_looks()
    assert again is not first and all(look.comm is not None for look in again)
