"""Our background threads end before the interpreter does: a daemon thread running Python
while the interpreter finalizes can crash it (CPython gh-110052). One ``atexit`` hook stops
each registered thread and waits a moment for it.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable

JOIN_AT_EXIT_S = 2.0  # a thread inside a scheduler command is left to its own time-out

_STOPS: weakref.WeakKeyDictionary[threading.Thread, Callable[[], None]] = \
    weakref.WeakKeyDictionary()


def stop_at_exit(thread: threading.Thread, stop: Callable[[], None]) -> None:
    """At the interpreter's exit, call ``stop`` and wait a moment for ``thread``."""
    _STOPS[thread] = stop


@atexit.register
def _stop_all() -> None:
    threads = list(_STOPS.items())
    for _, stop in threads:
        stop()
    for thread, _ in threads:
        if thread.is_alive() and thread is not threading.current_thread():
            thread.join(JOIN_AT_EXIT_S)
