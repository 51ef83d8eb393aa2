"""The job widget: live state, log tail, cancel and fetch buttons.

One monitor thread per kernel asks the watcher for fresh snapshots of every live
widget's job in one batched poll, at a gentle interval, and re-renders what changed; it
stops when every job has ended. It never decides or writes a state itself.
"""

from __future__ import annotations

import html
import threading
import weakref
from typing import Any

import ipywidgets as widgets

from ..core.errors import HpcMagicsError
from .job_view import JobView

REFRESH_INTERVAL_S = 5.0


def view_of(handle: Any) -> JobView:
    return JobView(handle.job_id, handle.name, handle._state, handle.backend.name,
                   str(handle.folder.path), handle.fetched, handle.status.note)


class JobWidget(widgets.VBox):
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.status = widgets.HTML()
        self.cancel_button = widgets.Button(description="Cancel", icon="stop",
                                            button_style="danger", tooltip="scancel this job")
        self.log_button = widgets.Button(description="Log", icon="file-text-o",
                                         tooltip="show the last lines of the job's log")
        self.fetch_button = widgets.Button(description="Fetch", icon="download",
                                           tooltip="bring results into the notebook")
        # HTML, not Output: it renders without a kernel's output capture (and tests see it)
        self.message = widgets.HTML()
        self.log_view = widgets.HTML()
        self.cancel_button.on_click(lambda _: self._run(self.handle.cancel))
        self.log_button.on_click(lambda _: self._show_log())
        self.fetch_button.on_click(lambda _: self._fetch())
        buttons = widgets.HBox([self.cancel_button, self.log_button, self.fetch_button])
        super().__init__([self.status, buttons, self.message, self.log_view])
        self.render()

    def render(self) -> None:
        self.rendered_key = self.key()
        view = view_of(self.handle)
        self.status.value = view.status_html()
        self.cancel_button.disabled = not view.can_cancel
        self.fetch_button.disabled = not view.can_fetch and not self.handle.folder.has_results()

    def key(self) -> tuple[str, bool, str]:
        """What the widget shows that can change: re-render when this differs."""
        return (self.handle._state, self.handle.fetched, self.handle.status.note)

    def refresh(self) -> None:
        self.handle.refresh()
        self.render()

    def _run(self, action: Any) -> None:
        self.message.value = ""
        try:
            action()
        except HpcMagicsError as error:
            self.message.value = f"<span style='color:#c62828'>{html.escape(str(error))}</span>"
        self.render()

    def _show_log(self) -> None:
        text = self.handle.log(tail=40) or "(the log is empty so far)"
        self.log_view.value = (f"<pre style='max-height:20em;overflow:auto'>"
                               f"{html.escape(text)}</pre>")

    def _fetch(self) -> None:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:  # pragma: no cover
            shell = None

        def fetch() -> None:
            # a button callback's prints go nowhere visible: show everything in the widget
            values = self.handle.fetch(shell.user_ns if shell is not None else None, show=False,
                                       results_grace_s=0.5)  # a button never blocks
            names = ", ".join(sorted(n for n in values if n != "_")) or "nothing"
            self.message.value = f"now in the notebook: <code>{html.escape(names)}</code>"
            output = self.handle.folder.shown_output()
            if output:
                self.log_view.value = f"<pre>{html.escape(output)}</pre>"

        self._run(fetch)


class _Monitor:
    """Refreshes live widgets from a single background thread."""

    def __init__(self) -> None:
        self._widgets: weakref.WeakSet[JobWidget] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def add(self, widget: JobWidget) -> None:
        with self._lock:
            self._widgets.add(widget)
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._loop, name="hpc-magics-monitor",
                                                daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        from ..scheduler.watcher import watcher

        while not self._stop.wait(REFRESH_INTERVAL_S):
            with self._lock:
                widgets_now = list(self._widgets)
            # until the end; a provisional end is corrected by the next %hpc_jobs or fetch,
            # so a cluster without accounting never keeps this thread polling
            live = [w for w in widgets_now if not w.handle.status.final]
            if live:
                try:  # one batched poll for every live widget; the watcher decides states
                    watcher().poll_jobs([(w.handle.folder, w.handle._task) for w in live])
                except HpcMagicsError:
                    pass
            for widget in widgets_now:
                if widget.rendered_key != widget.key():
                    widget.render()
            if not live:
                return


MONITOR = _Monitor()


def job_widget(handle: Any) -> JobWidget:
    widget = JobWidget(handle)
    MONITOR.add(widget)
    return widget
