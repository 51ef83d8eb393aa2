"""The %hpc_server widget and magic, through real ipywidgets and a real IPython shell."""

from __future__ import annotations

import time

import pytest

from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.scheduler.own_job import OwnJob
from hpc_magics.scheduler.server_status import ServerStatus, server_status
from hpc_magics.widgets.server import TICK_S, ServerWidget
from hpc_magics.widgets.server_view import STOP_JOB, STOP_NOTHING


def in_job_status(left_s: float = 3600.0) -> ServerStatus:
    now = time.time()
    return server_status(OwnJob("321", "lab", "debug", 1, now - 600, now + left_s), now)


def test_stop_needs_confirmation_and_runs_once() -> None:
    calls: list[str] = []

    def stop() -> str:
        calls.append("stop")
        return "Job 321 is being cancelled."

    widget = ServerWidget(in_job_status(), stop_target=STOP_JOB, stop=stop,
                          tick_s=None)
    assert "job 321" in widget.info.value
    assert widget.stop_button.description == "Cancel job 321"
    assert widget.confirm_box.layout.display == "none"
    widget.stop_button.click()
    assert widget.confirm_box.layout.display == "flex" and calls == []
    widget.cancel_button.click()
    assert widget.confirm_box.layout.display == "none" and calls == []
    widget.stop_button.click()
    widget.confirm_button.click()
    assert calls == ["stop"]
    assert "being cancelled" in widget.message.value
    assert widget.stop_button.disabled
    widget.confirm_button.click()
    assert calls == ["stop"]


def test_a_failed_stop_says_why_and_can_be_retried() -> None:
    def stop() -> str:
        raise HpcMagicsError("scancel 321 failed: Invalid job id specified")

    widget = ServerWidget(in_job_status(), stop_target=STOP_JOB, stop=stop,
                          tick_s=None)
    widget.stop_button.click()
    widget.confirm_button.click()
    assert "Invalid job id" in widget.message.value
    assert not widget.stop_button.disabled


def test_an_error_is_shown_as_text_not_as_markup() -> None:
    """The server's or scancel's words reach the widget as text: a job name or a reason
    with markup in it is shown, never rendered (it was put into the HTML as it came)."""
    def stop() -> str:
        raise HpcMagicsError("scancel failed for job <img src=x onerror=alert(1)>")

    widget = ServerWidget(in_job_status(), stop_target=STOP_JOB, stop=stop, tick_s=None)
    widget.stop_button.click()
    widget.confirm_button.click()
    assert "&lt;img src=x onerror=alert(1)&gt;" in widget.message.value
    assert "<img" not in widget.message.value


def test_countdown_moves_with_the_clock_without_asking_anyone() -> None:
    start = time.time()
    moments = iter([start, start + 3000])
    status = in_job_status(left_s=3600)
    widget = ServerWidget(status, stop_target=STOP_JOB, stop=None,
                          clock=lambda: next(moments), tick_s=None)
    assert "1h00m left" in widget.info.value or "59m left" in widget.info.value
    widget.render()
    assert "10m left" in widget.info.value or "9m left" in widget.info.value
    assert "Less than 15 minutes" in widget.info.value
    assert widget.stop_button.disabled  # no stop callback given


def test_refresh_replaces_the_snapshot() -> None:
    fresh = in_job_status(left_s=120)
    widget = ServerWidget(in_job_status(), stop_target=STOP_JOB,
                          read_status=lambda: fresh, tick_s=None)
    widget.refresh_button.click()
    assert widget.snapshot is fresh
    assert "Less than 5 minutes" in widget.info.value


def test_a_pending_status_is_read_again_until_whole() -> None:
    """The server answered from the job's environment before the scheduler did (22.05
    gives a job no times): the widget looks again by itself, then only counts down."""
    now = time.time()
    told = server_status(OwnJob("321", "lab", "debug", 1), now, pending=True)
    answers = iter([told, in_job_status()])
    reads: list[ServerStatus] = []

    def read_status() -> ServerStatus:
        reads.append(next(answers))
        return reads[-1]

    widget = ServerWidget(told, stop_target=STOP_JOB, read_status=read_status, tick_s=None)
    assert "left" not in widget.info.value
    assert widget.next_tick_s < TICK_S
    widget.tick()
    assert len(reads) == 1 and "left" not in widget.info.value
    widget.tick()
    assert len(reads) == 2 and "job 321 · " in widget.info.value
    assert "left" in widget.info.value and "node-h" in widget.info.value
    assert widget.next_tick_s == TICK_S
    widget.tick()
    assert len(reads) == 2  # whole: the countdown asks no one


def test_hpc_server_magic_outside_a_job(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(name, raising=False)
    shell = InteractiveShell.instance()  # the suite's one shell, as the other tests use
    shell.run_line_magic("load_ext", "hpc_magics")
    shell.run_line_magic("hpc_server", "--text")
    assert "not running in a Slurm job" in capsys.readouterr().out
    widget_shown = shell.run_line_magic("hpc_server", "")
    assert widget_shown is None
    from hpc_magics.server.client import ServerControl

    assert ServerControl.discover().stop_target == STOP_NOTHING
