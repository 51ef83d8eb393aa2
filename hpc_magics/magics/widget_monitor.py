"""The one thread that keeps the job widgets current: each round, one batched poll of
the watcher for every live widget (after the end, their figures: the user's shared
``sacct``), then each widget renders its handle's snapshot; it stops when all have ended.

Above the widgets: they are views of snapshots and never ask the scheduler themselves.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

from ..core.background import stop_at_exit
from ..core.errors import HpcMagicsError, InternalBug, report_bug
from ..jobfacts import accounting_told, ended_because_all
from ..scheduler.watcher import poll_targets, usage_of, watcher
from ..widgets import job as job_widgets
from ..widgets.job import JobWidget
from ..widgets.parts import error_html


class Monitor:
    def __init__(self) -> None:
        self._widgets: weakref.WeakSet[JobWidget] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def add(self, widget: JobWidget) -> None:
        with self._lock:
            self._widgets.add(widget)
            # a thread that has not decided to end (under this lock) will see the widget
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._loop, name="hpc-magics-monitor",
                                                daemon=True)
                stop_at_exit(self._thread, self._stop.set)
                self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(job_widgets.REFRESH_INTERVAL_S):
            with self._lock:
                widgets_now = list(self._widgets)
            try:
                more = self.tick(widgets_now)
            except Exception as error:  # the thread outlives any failure: said, then on
                self.say_failure(widgets_now, error)
                more = True
            if not more and self._may_end(widgets_now):
                return

    def _may_end(self, ticked: list[JobWidget]) -> bool:
        """Decided under the lock ``add`` takes: a widget added since the round began keeps
        the thread; else no thread is left, and the next ``add`` starts one."""
        seen = {id(widget) for widget in ticked}
        with self._lock:
            if any(id(widget) not in seen for widget in self._widgets):
                return False
            self._thread = None
            return True

    @staticmethod
    def say_failure(widgets_now: list[JobWidget], error: Exception) -> None:
        """One line under each widget (the traceback goes to the log, once)."""
        problem = error if isinstance(error, HpcMagicsError) and not isinstance(
            error, InternalBug) else report_bug("updating the job widgets", error)
        line = error_html(problem)
        for widget in widgets_now:
            with contextlib.suppress(Exception):
                widget.message.value = line

    @staticmethod
    def tick(widgets_now: list[JobWidget]) -> bool:
        """One round for all widgets; False when none needs another."""
        # until the end; a provisional end (the result file, the queue) while the job's
        # figures are awaited from the same sacct answer, so Slurm's word replaces it; later
        # the next %hpc_jobs or fetch: a cluster without accounting never keeps this polling
        live = [w for w in widgets_now if not w.handle.status.final
                or (not w.handle.status.definite and w.wants_usage())]
        if live:
            try:  # one batched poll for every live widget; the watcher decides states
                watcher().poll_jobs([t for w in live for t in poll_targets(w.handle)])
            except InternalBug:
                raise  # said under the widgets (``_loop``), never swallowed
            except HpcMagicsError:
                pass
        failed = [w for w in widgets_now if w.wants_end_state()]
        if failed:  # a step killed for memory leaves the job FAILED: one sacct for all
            said = ended_because_all({w.handle.job_id: w.handle.status.state for w in failed})
            for widget in failed:  # asked again next round when accounting could not say
                if accounting_told(widget.handle.job_id):
                    widget.end_state = said[widget.handle.job_id]
        ended = [w for w in widgets_now if w.wants_usage()]
        if ended:
            try:  # their figures: the user's shared sacct call, never one per widget
                usage = usage_of([w.handle for w in ended])
            except InternalBug:
                raise
            except HpcMagicsError:
                usage = {}
            for position, widget in enumerate(ended):
                if position in usage:
                    widget.take_usage(usage[position])
        for widget in widgets_now:
            if widget.rendered_key != widget.key():
                widget.render()
        return bool(live) or any(w.wants_usage() for w in ended)


MONITOR = Monitor()


def job_widget(handle: Any) -> JobWidget:
    """The job's widget, kept current by the monitor."""
    widget = JobWidget(handle)
    MONITOR.add(widget)
    return widget
