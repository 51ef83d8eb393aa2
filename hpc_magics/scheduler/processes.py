"""A local process known by its pid and its start time, never by its pid alone: pids are
reused, and a pid now held by a process that started at another time is never shown as
running nor signalled. The start time is psutil's ``create_time()`` (the same value every
time it is read for the same process)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
from collections.abc import Callable

import psutil

# two readings of one process's start time agree to the float; another process that got
# the same pid started at least one clock tick (1/100 s) later
SAME_START_S = 0.001
# a file's time comes from its file server's clock (a home on NFS), which may run behind
FILE_CLOCK_SLACK_S = 60.0


def started(pid: int) -> float | None:
    """When process ``pid`` started (``None`` when there is no such process)."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def alive(pid: object, started_at: object) -> bool:
    """Whether the process recorded as (``pid``, ``started_at``) still runs (a zombie has
    ended). Without a recorded start time nothing is known to run."""
    try:
        recorded = float(str(started_at))
    except (TypeError, ValueError):
        return False
    return _runs(pid, lambda start: math.isclose(start, recorded, rel_tol=0.0,
                                                 abs_tol=SAME_START_S))


def started_by(pid: object, moment: float) -> bool:
    """Whether process ``pid`` runs and had started by ``moment``: for a process known only
    by a file it wrote (a Jupyter server's runtime file, its mtime)."""
    return _runs(pid, lambda start: start <= moment + FILE_CLOCK_SLACK_S)


def _runs(pid: object, started_as: Callable[[float], bool]) -> bool:
    try:
        process = psutil.Process(int(str(pid)))
        return started_as(process.create_time()) and \
            process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except (TypeError, ValueError, psutil.Error):
        return False


def signal_group(pid: object, started_at: object, number: int = signal.SIGTERM) -> bool:
    """Send ``number`` to the process group the recorded process leads (to the process alone
    when it leads none), only while it is that very process. Whether a signal was sent."""
    if not alive(pid, started_at):
        return False
    process = int(str(pid))
    try:
        os.killpg(process, number)
        return True
    except ProcessLookupError:  # it leads no group: the process alone
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process, number)
            return True
    except PermissionError:
        pass
    return False
