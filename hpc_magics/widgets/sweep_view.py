"""The job widget's section for a sweep: tasks per state, the failed ones, the table (the
job widget's Rerun button submits the failed tasks again).

It reads the watcher's snapshots of the sweep's tasks (the job widget's monitor polls them
in its one batched poll, see ``scheduler/watcher.poll_targets``); it asks nobody itself.
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

import ipywidgets as widgets

from ..core.errors import HpcMagicsError
from ..core.jobs import SUCCESS_STATES, phase
from ..sweep_handle import table_html
from .job_view import PHASE_COLOURS

SHOWN_FAILURES = 5


def counts_html(states: dict[int, str]) -> str:
    """``20 tasks: 17 COMPLETED · 1 FAILED · 2 RUNNING`` (pure)."""
    counts = Counter(states.values())
    parts = [f"<span style='color:{PHASE_COLOURS[phase(state)]}'>{count} "
             f"{html.escape(state)}</span>" for state, count in sorted(counts.items())]
    return f"<b>{len(states)} tasks</b>: " + " · ".join(parts)


def failures_html(failed: list[tuple[int, str]]) -> str:
    """The first failed tasks (index, parameters) as a short list (pure)."""
    if not failed:
        return ""
    items = "".join(f"<li>task {index}: <code>{html.escape(text)}</code></li>"
                    for index, text in failed[:SHOWN_FAILURES])
    more = f"<li>… and {len(failed) - SHOWN_FAILURES} more</li>" \
        if len(failed) > SHOWN_FAILURES else ""
    return f"<ul style='margin:0'>{items}{more}</ul>"


class SweepSection(widgets.VBox):
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.counts = widgets.HTML()
        self.failures = widgets.HTML()
        self.table = widgets.HTML()  # the results table, once every task has ended
        self.table_states: dict[int, str] = {}  # the states the table was made from
        super().__init__([self.counts, self.failures, self.table])
        self.render()

    def _states(self) -> dict[int, str]:
        return {i: s.state for i, s in self.handle.task_states(ask=False).items()}

    def key(self) -> tuple[tuple[int, str], ...]:
        return tuple(sorted(self._states().items()))

    def render(self) -> None:
        states = self._states()
        self.counts.value = counts_html(states)
        failed = sorted(i for i, s in states.items()
                        if phase(s) in {"failed", "ended"} and s not in SUCCESS_STATES)
        points = self.handle.points() if failed else []
        self.failures.value = failures_html([(i, repr(points[i])) for i in failed])
        live = any(phase(s) in {"pending", "running"} for s in states.values())
        # again whenever the states change (a view that knew fewer tasks, or an earlier
        # state of one, made a table the final states would not)
        if states and not live and states != self.table_states:
            self.table_states = states
            try:
                self.table.value = table_html(self.handle.table(ask=False))
            except HpcMagicsError as error:
                self.table.value = html.escape(str(error))
