"""Background threads say what went wrong and keep going: a bug is a bug to report, never
"accounting unreachable", and the widget monitor outlives any exception."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hpc_magics.core.errors import InternalBug
from hpc_magics.magics.widget_monitor import Monitor
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.accounting import SharedAccounting
from hpc_magics.widgets import job as job_widget


def _sacct(tmp_path: Path, runner: Any) -> SharedAccounting:
    return SharedAccounting(user="nobody", cluster="test", cache_dir=tmp_path, runner=runner)


def test_a_bug_reading_sacct_is_reported_as_a_bug(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    # a fake: hpc_magics' own code failing on sacct's answer cannot be had from a real
    # cluster on demand; a runner whose answer is not a CommandResult stands in for it
    def broken(*args: Any, **kwargs: Any) -> Any:
        return object()

    with caplog.at_level(logging.ERROR, logger="hpc_magics"), \
            pytest.raises(InternalBug, match="hpc_magics bug while reading sacct's answer"):
        _sacct(tmp_path, broken).answers_within(["123"], 60.0)
    assert "Traceback" in caplog.text or caplog.records[0].exc_info


def test_sacct_that_fails_is_unreachable_not_a_bug(tmp_path: Path) -> None:
    def refused(argv: Any, **kwargs: Any) -> commands.CommandResult:
        return commands.CommandResult(tuple(argv), 1, "", "sacct: error: slurmdbd down")

    found = _sacct(tmp_path, refused).answers_within(["123"], 60.0)
    assert found == {"123": None}  # None: unreachable, as callers say it


def test_the_widget_monitor_survives_any_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_widget, "REFRESH_INTERVAL_S", 0.01)
    rounds: list[int] = []
    done = threading.Event()

    def tick(widgets_now: list[Any]) -> bool:
        rounds.append(len(widgets_now))
        if len(rounds) < 3:
            raise KeyError("a bug in a round")
        done.set()
        return False

    monitor = Monitor()
    monkeypatch.setattr(monitor, "tick", tick)
    class Widget:  # what the monitor touches of a job widget when a round fails
        message = SimpleNamespace(value="")

    widget = Widget()
    monitor._widgets.add(widget)  # type: ignore[arg-type]
    monitor._stop.clear()
    thread = threading.Thread(target=monitor._loop, daemon=True)
    thread.start()
    assert done.wait(10), "the monitor thread died at the first exception"
    thread.join(5)
    assert len(rounds) == 3
    assert "hpc_magics bug while updating the job widgets" in widget.message.value
    assert "KeyError" in widget.message.value
