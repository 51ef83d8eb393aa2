"""The widget monitor's thread decides to end under the lock ``add`` takes: a widget added
while the last round runs is refreshed, never left to a thread that is ending."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hpc_magics.magics.widget_monitor import Monitor
from hpc_magics.widgets import job as job_widget


def test_a_widget_added_as_the_monitor_ends_its_last_round_is_refreshed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_widget, "REFRESH_INTERVAL_S", 0.01)
    monitor = Monitor()

    class Widget:  # the round itself is replaced: only the monitor's bookkeeping is under test
        pass

    first, late = Widget(), Widget()
    rounds: list[list[Any]] = []
    late_ticked = threading.Event()

    def tick(widgets_now: list[Any]) -> bool:
        rounds.append(list(widgets_now))
        if late in widgets_now:
            late_ticked.set()
        elif len(rounds) == 1:
            # the window: this round's widgets are taken and it is about to say "no more"
            monitor.add(late)  # type: ignore[arg-type]
        return False  # nothing of this round needs another

    monkeypatch.setattr(monitor, "tick", tick)
    monitor.add(first)  # type: ignore[arg-type]
    assert late_ticked.wait(30), "the widget added during the last round was never refreshed"
    assert rounds[0] == [first] and late in rounds[-1]
