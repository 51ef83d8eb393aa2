"""The ``%hpc_server`` widget: the server's job, time left, and Stop with a confirmation.

Built from immutable ``ServerStatus`` snapshots and callbacks (read status, stop; through
the server: list the jobs started from it, cancel one), so it works the same for a server
reached over HTTP and for a kernel on its own. The confirmation lists the jobs started from
this server that still run, each with a box to tick for cancelling: unticked, they outlive
the server on purpose.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence

import ipywidgets as widgets

from ..core.errors import HpcMagicsError
from ..scheduler.server_status import ServerStatus
from .parts import error_html
from .server_view import ServerView, server_view

TICK_S = 30.0
# the server answered before the scheduler did: look again soon (its cached answer, no
# scheduler query of ours), so the job's times show once known, without a Refresh click
PENDING_LOOK_S = 2.0


class ServerWidget(widgets.VBox):
    def __init__(self, status: ServerStatus, *, stop_target: str,
                 read_status: Callable[[], ServerStatus] | None = None,
                 stop: Callable[[], str] | None = None,
                 clock: Callable[[], float] = time.time, tick_s: float | None = TICK_S,
                 read_jobs: Callable[[], Sequence[tuple[str, str]]] | None = None,
                 cancel_job: Callable[[str], None] | None = None) -> None:
        self.snapshot = status
        self.stop_target = stop_target
        self._read_status = read_status
        self._stop = stop
        self._clock = clock
        self._read_jobs = read_jobs
        self._cancel_job = cancel_job
        self.job_boxes: list[widgets.Checkbox] = []  # one per running job, job id in .job_id
        self.jobs_box = widgets.VBox()
        self.info = widgets.HTML()
        self.stop_button = widgets.Button(description="Stop my server", icon="power-off",
                                          button_style="danger")
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh",
                                             disabled=read_status is None)
        self.confirm_text = widgets.HTML()
        self.confirm_button = widgets.Button(description="Yes, stop it", button_style="danger")
        self.cancel_button = widgets.Button(description="Keep it running")
        self.confirm_box = widgets.VBox(
            [self.confirm_text, self.jobs_box,
             widgets.HBox([self.confirm_button, self.cancel_button])],
            layout=widgets.Layout(display="none"))
        self.message = widgets.HTML()
        self.stop_button.on_click(lambda _: self.ask_to_confirm())
        self.confirm_button.on_click(lambda _: self.confirm_stop())
        self.cancel_button.on_click(lambda _: self.hide_confirmation())
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([self.info, widgets.HBox([self.stop_button, self.refresh_button]),
                          self.confirm_box, self.message])
        self.stopped = False
        self._tick_s = tick_s
        self.render()
        if tick_s:
            _start_ticker(self)

    @property
    def view(self) -> ServerView:
        return server_view(self.snapshot, self._clock(), self.stop_target)

    def render(self) -> None:
        view = self.view
        self.info.value = view.html()
        self.stop_button.description = view.stop_label
        self.stop_button.tooltip = view.confirm_text
        self.stop_button.disabled = self.stopped or not view.can_stop or self._stop is None
        self.confirm_text.value = view.confirm_text

    def refresh(self) -> None:
        if self._read_status is None or self.stopped:
            return
        try:
            self.snapshot = self._read_status()
        except HpcMagicsError as error:
            self.message.value = error_html(error)
        self.render()

    @property
    def next_tick_s(self) -> float:
        return PENDING_LOOK_S if self.snapshot.pending else self._tick_s or TICK_S

    def tick(self) -> None:
        """Move the countdown; while the server's answer is pending, read it again."""
        if self.snapshot.pending:
            self.refresh()
        else:
            self.render()

    def ask_to_confirm(self) -> None:
        if not self.stop_button.disabled:
            self._offer_jobs()
            self.confirm_box.layout.display = "flex"

    def _offer_jobs(self) -> None:
        """A box per job started from this server that still runs; none ticked."""
        jobs: Sequence[tuple[str, str]] = ()
        if self._read_jobs is not None and self._cancel_job is not None:
            try:
                jobs = self._read_jobs()
            except HpcMagicsError as error:
                self.message.value = error_html(error)
        self.job_boxes = []
        for job_id, label in jobs:
            # width auto: the default width cuts the label ("… (RUNNI…") in the browser
            box = widgets.Checkbox(value=False, description=f"cancel {label}", indent=False,
                                   layout=widgets.Layout(width="auto"))
            box.job_id = job_id
            self.job_boxes.append(box)
        intro = widgets.HTML(
            "Started from this server and still queued or running; they keep going after "
            "it stops unless ticked:") if jobs else widgets.HTML()
        self.jobs_box.children = [intro, *self.job_boxes]

    def hide_confirmation(self) -> None:
        self.confirm_box.layout.display = "none"

    def confirm_stop(self) -> None:
        self.hide_confirmation()
        if self._stop is None or self.stopped:
            return
        ticked = [box.job_id for box in self.job_boxes if box.value]
        left = [box.job_id for box in self.job_boxes if not box.value]
        try:
            for job_id in ticked:
                if self._cancel_job is not None:
                    self._cancel_job(job_id)
            said = self._stop()
        except HpcMagicsError as error:
            self.message.value = error_html(error)
            return
        if ticked:
            said += f" Cancelled: job {', '.join(ticked)}."
        if left:
            said += f" Still running, as you chose: job {', '.join(left)}."
        self.stopped = True
        self.message.value = f"<b>{said}</b>"
        self.render()


def _start_ticker(widget: ServerWidget) -> None:
    """Tick so the countdown moves (no scheduler or HTTP calls once the status is whole)."""
    ref = weakref.ref(widget)
    first_wait = widget.next_tick_s

    def tick() -> None:
        wait = first_wait
        while True:
            time.sleep(wait)
            alive = ref()
            if alive is None or alive.stopped or alive.comm is None:
                return
            alive.tick()
            wait = alive.next_tick_s
            del alive

    threading.Thread(target=tick, name="hpc_server-countdown", daemon=True).start()
