"""The cell's output while its job runs: a background thread reads the job's stream file
(``jobfolder/live_stream.py``) and shows it in an ``ipywidgets.Output`` in the cell, as a
local cell shows its output: one entry per run of one stream, a progress bar one line.

It reads the file, never the scheduler: every 0.1 s while text comes, backing off to once a
second while none does. An ``Output`` widget, because its ``outputs`` may be set from any
thread (a print from a background thread lands in whichever cell runs at that moment).

The handle keeps its live view (``handle.live``): its fetch then leaves the output to it
rather than printing it a second time.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from ..core.background import stop_at_exit
from ..jobfolder.live_stream import STREAM_FILE, StreamReader, StreamText

FIRST_DELAY_S = 0.1  # after new text: the next look
LAST_DELAY_S = 1.0  # the back-off's ceiling while nothing new comes
GROWTH = 1.5


def current_request() -> str | None:
    """The id of the front end's request the kernel answers now (a cell's execution, a
    widget's click), or None outside a kernel."""
    from IPython import get_ipython

    header = getattr(get_ipython(), "parent_header", None) or {}
    return (header.get("header") or {}).get("msg_id")


class LiveOutput:
    """Follows one stream file until ``ended()`` and the file has nothing more; ``finish``
    (the fetch) takes the rest at once, so the output is shown once, in order."""

    def __init__(self, path: Path, ended: Callable[[], bool]) -> None:
        self.view = widgets.Output()
        self._reader = StreamReader(path)
        self._text = StreamText()
        self._ended = ended
        self._lock = threading.Lock()  # the thread and ``finish`` take turns
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="hpc-magics-live-output",
                                        daemon=True)
        self._request = current_request()  # the cell execution that shows this view

    def start(self) -> None:
        stop_at_exit(self._thread, self._done.set)
        self._thread.start()

    def pump(self) -> bool:
        """Show what was added since the last look; True when there was something."""
        with self._lock:
            pieces = self._reader.read_new()
            for name, text in pieces:
                self._text.add(name, text)
            if pieces:  # the last entry replaced, not one more appended
                self.view.outputs = tuple(self._text.outputs())
            return bool(pieces)

    def _follow(self) -> None:
        delay = FIRST_DELAY_S
        with contextlib.suppress(Exception):  # a view that fails stops; the fetch says the rest
            while not self._done.is_set():
                ended = self._ended()  # asked first: what was written before the end is read
                new = self.pump()
                if ended and not new:
                    break
                delay = FIRST_DELAY_S if new else min(LAST_DELAY_S, delay * GROWTH)
                self._done.wait(delay)
        self._done.set()

    def finish(self) -> bool:
        """The job is over and its results here: stop following. In the cell that shows
        this view (``--wait``) the view empties and returns True: the fetch then prints the
        output as plain output, which the saved notebook keeps and every front end shows;
        elsewhere (a later cell, a click) the view takes the rest and keeps it (False)."""
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self._request is not None and current_request() == self._request:
            with self._lock:
                self.view.outputs = ()
            return True
        while self.pump():
            pass
        return False


def live_output(handle: Any, shell: Any) -> Any:
    """Follow the job's output as it comes (``handle.live``), not shown yet; None where no
    front end renders a widget (a terminal's IPython): the fetch prints it at the end."""
    if getattr(shell, "kernel", None) is None:
        return None

    def ended() -> bool:  # the folder and the watcher's latest snapshot: no scheduler call
        return bool(handle.folder.has_results() or handle.status.final)

    live = LiveOutput(handle.folder.path / STREAM_FILE, ended)
    handle.live = live
    live.start()
    return live


def follow_output(handle: Any, shell: Any) -> Any:
    """Show the job's output under its widget as it comes (``live_output``)."""
    from IPython.display import display

    live = live_output(handle, shell)
    if live is not None:
        display(live.view)
    return live
