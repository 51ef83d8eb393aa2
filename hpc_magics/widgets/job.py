"""The job widget: the job's story while it waits and runs, and how it used its resources.

PENDING: the reason in plain words and Slurm's estimated start. RUNNING: elapsed against
the time limit as a progress bar, the nodes and a live tail of the log (read from the
job folder; "More" shows more lines). Cancel only while the job can be cancelled, after a
confirmation; Fetch once it has ended; an efficiency section (and a GPU plot when the job
recorded GPU samples) after the end.

One monitor thread per kernel asks the watcher for fresh snapshots of every live
widget's job in one batched poll (and, after the end, their usage: the user's shared
``sacct``), and re-renders what changed; it stops when every job has ended and its figures
are in. It never decides a state or asks the scheduler itself.
"""

from __future__ import annotations

import html
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..core.errors import HpcMagicsError
from ..scheduler.targets import poll_targets, usage_of
from .job_view import JobView
from .segments import segment_html, segment_note
from .sweep_view import sweep_section

REFRESH_INTERVAL_S = 5.0
TAIL_LINES = 8  # the live tail
MORE_LINES = 200  # "More"
TAIL_BYTES = 256 * 1024  # read at most this much of the end of each log file
# after the end, how long the widget keeps asking for the job's usage before giving up
USAGE_PATIENCE_S = 300.0

# Extra parts other modules add (a sweep's per-task table, "segment k of N"): each gets
# the widget and returns a line of HTML ("" for none). Rendered under the story line.
EXTRA_LINES: list[Callable[[JobWidget], str]] = []
# Extra sections (a widget each, or None), added at the end when the widget is built.
EXTRA_SECTIONS: list[Callable[[JobWidget], widgets.Widget | None]] = []


def view_of(handle: Any) -> JobView:
    status = handle.status
    detail = status.detail
    elapsed: float | None = None
    if detail is not None and detail.elapsed_s is not None:
        # the queue's figure is from its last answer: count on from there while it runs
        running = status.phase == "running"
        elapsed = detail.elapsed_s + (max(0.0, time.time() - status.detail_at)
                                      if running and status.detail_at else 0.0)
    return JobView(handle.job_id, handle.name, status.state, handle.backend.name,
                   str(handle.folder.path), handle.fetched,
                   reason=detail.reason if detail else "",
                   start_time=detail.start_time if detail else None,
                   elapsed_s=elapsed, time_limit_s=detail.time_limit_s if detail else None,
                   node_list=detail.node_list if detail else "", note=status.note)


def _shown(widget: widgets.Widget, visible: bool) -> None:
    widget.layout.display = None if visible else "none"


class JobWidget(widgets.VBox):
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.status = widgets.HTML()
        self.story = widgets.HTML()
        self.progress = widgets.FloatProgress(min=0.0, max=1.0, description="time used",
                                              layout=widgets.Layout(width="60%"))
        self.cancel_button = widgets.Button(description="Cancel", icon="stop",
                                            button_style="danger", tooltip="scancel this job")
        self.log_button = widgets.Button(description="More", icon="file-text-o",
                                         tooltip="show more of the job's log")
        self.fetch_button = widgets.Button(description="Fetch", icon="download",
                                           tooltip="bring results into the notebook")
        self.confirm_text = widgets.HTML()
        self.confirm_yes = widgets.Button(description="Yes, cancel it", button_style="danger")
        self.confirm_no = widgets.Button(description="No, keep it")
        self.confirm = widgets.HBox([self.confirm_text, self.confirm_yes, self.confirm_no])
        # HTML, not Output: it renders without a kernel's output capture (and tests see it)
        self.message = widgets.HTML()
        self.log_view = widgets.HTML()
        self.efficiency = widgets.HTML()
        self.gpu_plot = widgets.Image(format="png")
        self.log_lines = TAIL_LINES
        self.usage: tuple[Any, ...] | None = None  # the job's figures, once accounting has them
        self.usage_note = ""
        self._ended_at: float | None = None
        self.cancel_button.on_click(lambda _: self._ask_to_cancel())
        self.confirm_yes.on_click(lambda _: self._cancel())
        self.confirm_no.on_click(lambda _: self._close_confirm())
        self.log_button.on_click(lambda _: self._toggle_log())
        self.fetch_button.on_click(lambda _: self._fetch())
        buttons = widgets.HBox([self.cancel_button, self.log_button, self.fetch_button])
        _shown(self.confirm, False)
        self.sweep = sweep_section(handle)  # a sweep's tasks, else None
        parts: list[widgets.Widget] = [
            self.status, *([self.sweep] if self.sweep is not None else []), self.story,
            self.progress, buttons, self.confirm, self.message, self.log_view, self.efficiency,
            self.gpu_plot]
        parts += [section for section in (hook(self) for hook in EXTRA_SECTIONS) if section]
        super().__init__(parts)
        self.render()

    # ------------------------------------------------------------------ rendering
    def render(self) -> None:
        self.rendered_key = self.key()
        view = view_of(self.handle)
        self.status.value = view.status_html() + segment_html(self.handle.folder.path)
        story = view.story()
        extra = [line for line in (hook(self) for hook in EXTRA_LINES) if line]
        self.story.value = "<br>".join([html.escape(story)] * bool(story) + extra)
        fraction = view.progress
        _shown(self.progress, fraction is not None)
        self.progress.value = fraction or 0.0
        self.cancel_button.disabled = not view.can_cancel
        _shown(self.cancel_button, view.can_cancel)
        if not view.can_cancel:
            _shown(self.confirm, False)
        can_fetch = view.can_fetch or self.handle.folder.has_results()
        self.fetch_button.disabled = not can_fetch
        # a sweep's results are the table its section shows
        _shown(self.fetch_button, can_fetch and self.sweep is None)
        self._render_log()
        self._render_efficiency(view)
        if self.sweep is not None:
            self.sweep.render()

    def key(self) -> tuple[Any, ...]:
        """What the widget shows that can change: re-render when this differs."""
        status = self.handle.status
        detail = status.detail
        moving = int(time.time() // REFRESH_INTERVAL_S) if status.phase == "running" else 0
        return (status.state, status.note, self.handle.fetched, moving,
                (detail.reason, detail.start_time, detail.node_list) if detail else None,
                self._log_size(), self.usage is not None, self.usage_note,
                segment_note(self.handle.folder.path),
                self.sweep.key() if self.sweep is not None else ())

    def _log_size(self) -> int:
        size = 0
        for path in self.handle.backend.log_paths(self.handle.job_id, self.handle.folder):
            try:
                size += os.stat(path).st_size
            except OSError:
                pass
        return size

    def _tail(self) -> str:
        """The log's last lines, reading only the end of each file (logs can be huge and
        this runs every few seconds); submitit's own chatter left out, as in ``log()``."""
        lines: list[str] = []
        for path in self.handle.backend.log_paths(self.handle.job_id, self.handle.folder):
            try:
                with open(path, "rb") as stream:
                    stream.seek(0, os.SEEK_END)
                    size = stream.tell()
                    stream.seek(max(0, size - TAIL_BYTES))
                    chunk = stream.read().decode(errors="replace").splitlines()
            except OSError:
                continue
            if size > TAIL_BYTES:
                chunk = chunk[1:]  # the first line is cut
            lines += [line for line in chunk if not line.startswith("submitit ")]
        return "\n".join(lines[-self.log_lines:])

    def _render_log(self) -> None:
        text = self._tail()
        _shown(self.log_button, bool(text))
        self.log_button.description = "Less" if self.log_lines > TAIL_LINES else "More"
        self.log_view.value = (f"<pre style='max-height:20em;overflow:auto;margin:0'>"
                               f"{html.escape(text)}</pre>") if text else ""

    def _render_efficiency(self, view: JobView) -> None:
        from .efficiency import gpu_plot_png, report_html, reports

        if view.phase == "pending" or view.phase == "running" or self.usage is None:
            self.efficiency.value = (f"<small>{html.escape(self.usage_note)}</small>"
                                     if self.usage_note and view.can_fetch else "")
            _shown(self.gpu_plot, False)
            return
        items = reports(self.handle.folder, self.usage)
        self.efficiency.value = report_html(items)
        samples = [s for _, job_samples in items for s in job_samples]
        png = gpu_plot_png(samples, f"job {self.handle.job_id}") if len(items) == 1 else None
        if png:
            self.gpu_plot.value = png
        _shown(self.gpu_plot, bool(png))

    # ------------------------------------------------------------------ monitor's calls
    def refresh(self) -> None:
        self.handle.refresh()
        self.render()

    def wants_usage(self) -> bool:
        """Ended on Slurm, figures not in yet, and still worth asking for."""
        status = self.handle.status
        if self.usage is not None or not status.final or self.handle.backend.name != "slurm":
            return False
        self._ended_at = self._ended_at or time.monotonic()
        if time.monotonic() - self._ended_at > USAGE_PATIENCE_S:
            self.usage_note = "no efficiency figures: accounting never answered"
            return False
        return True

    def take_usage(self, usage: tuple[Any, ...] | None) -> None:
        if usage is None:
            self.usage_note = "efficiency figures: accounting unreachable for now"
        else:
            self.usage, self.usage_note = usage, ""

    # ------------------------------------------------------------------ actions
    def _run(self, action: Any) -> None:
        self.message.value = ""
        try:
            action()
        except HpcMagicsError as error:
            self.message.value = f"<span style='color:#c62828'>{html.escape(str(error))}</span>"
        self.render()

    def _ask_to_cancel(self) -> None:
        self.confirm_text.value = (f"Cancel job <code>{html.escape(self.handle.job_id)}</code>"
                                   "? Its work so far is lost.")
        _shown(self.confirm, True)

    def _close_confirm(self) -> None:
        _shown(self.confirm, False)

    def _cancel(self) -> None:
        _shown(self.confirm, False)
        self._run(self.handle.cancel)

    def _toggle_log(self) -> None:
        self.log_lines = TAIL_LINES if self.log_lines > TAIL_LINES else MORE_LINES
        self._render_log()

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
                self.message.value += f"<pre>{html.escape(output)}</pre>"

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
        while not self._stop.wait(REFRESH_INTERVAL_S):
            with self._lock:
                widgets_now = list(self._widgets)
            if not self.tick(widgets_now):
                return

    @staticmethod
    def tick(widgets_now: list[JobWidget]) -> bool:
        """One round for all widgets; False when none needs another."""
        from ..scheduler.watcher import watcher

        # until the end; a provisional end (the result file, the queue) while the job's
        # figures are awaited from the same sacct answer, so Slurm's word replaces it; later
        # the next %hpc_jobs or fetch: a cluster without accounting never keeps this polling
        live = [w for w in widgets_now if not w.handle.status.final
                or (not w.handle.status.definite and w.wants_usage())]
        if live:
            try:  # one batched poll for every live widget; the watcher decides states
                watcher().poll_jobs([t for w in live for t in poll_targets(w.handle)])
            except HpcMagicsError:
                pass
        ended = [w for w in widgets_now if w.wants_usage()]
        if ended:
            try:  # their figures: the user's shared sacct call, never one per widget
                usage = usage_of([w.handle for w in ended])
            except HpcMagicsError:
                usage = {}
            for position, widget in enumerate(ended):
                if position in usage:
                    widget.take_usage(usage[position])
        for widget in widgets_now:
            if widget.rendered_key != widget.key():
                widget.render()
        return bool(live) or any(w.wants_usage() for w in ended)


MONITOR = _Monitor()


def job_widget(handle: Any) -> JobWidget:
    widget = JobWidget(handle)
    MONITOR.add(widget)
    return widget
