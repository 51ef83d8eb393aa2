"""The job widget for a session (``%hpc_session``): the session's job with its state, node
and time left, and a Stop button that ends the session itself (its kernel shut down, its
job cancelled), not only the job under it.

Like every job widget it shows the watcher's snapshots, which the monitor feeds it
(``magics/widget_monitor.py``); stopping goes through the callback the magic gives, so the
widget never reaches the session or the scheduler itself.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from .job import BUTTONS, JobWidget
from .parts import shown


class SessionWidget(JobWidget):
    button_specs = {**BUTTONS, "cancel_button": (
        "Stop session", "stop", "shut the session's kernel down and cancel its job",
        "_ask_to_cancel", "danger")}

    def __init__(self, handle: Any, session: str, stop: Callable[[], str]) -> None:
        self.session = session
        self._stop = stop  # ends the session; returns its job id
        # stopped from here: no second Stop while the job ends (or, for a session that was
        # a step of your allocation, while that allocation runs on)
        self.stopped = False
        super().__init__(handle)

    def render(self) -> None:
        super().render()
        self.status.value = (f"<b>session {html.escape(self.session)}</b> · "
                             f"{self.status.value}")
        self._show("fetch_button", False)  # a session's results come back with each cell
        if self.stopped:
            self._show("cancel_button", False)

    def _ask_to_cancel(self) -> None:
        self.confirm_text.value = (f"Stop session <code>{html.escape(self.session)}</code> "
                                   f"(job <code>{html.escape(self.handle.job_id)}</code>)? "
                                   "The variables it holds are lost.")
        self.confirm_yes.description = "Yes, stop it"
        shown(self.confirm, True)

    def _cancel(self) -> None:
        shown(self.confirm, False)

        def stop() -> None:
            job_id = self._stop()
            self.stopped = True
            self.message.value = (f"session {html.escape(self.session)} stopped: its kernel "
                                  f"shut down and its job {html.escape(job_id)} ends")

        self._run(stop)
