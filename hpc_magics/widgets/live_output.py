"""The cell's output while its job runs: a background thread reads the job's stream file
(``jobfolder/live_stream.py``) and shows it in an ``ipywidgets.Output`` in the cell, as a
local cell shows its output: one entry per run of one stream, a progress bar one line.

It reads the file, never the scheduler: every 0.1 s while text comes, backing off to once a
second while none does. An ``Output`` widget, because its ``outputs`` may be set from any
thread (a print from a background thread lands in whichever cell runs at that moment).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

import ipywidgets as widgets

from ..jobfolder.live_stream import StreamReader, StreamText

FIRST_DELAY_S = 0.1  # after new text: the next look
LAST_DELAY_S = 1.0  # the back-off's ceiling while nothing new comes
GROWTH = 1.5


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

    def start(self) -> None:
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

    @property
    def following(self) -> bool:
        return not self._done.is_set()

    def finish(self) -> None:
        """The job is over and its results here: stop following, show the rest now."""
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        while self.pump():
            pass
