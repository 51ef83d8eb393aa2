"""A local process known by its pid and its start time, never by its pid alone.

Pids are reused: once a process ended, its pid soon names another process, another
user's or another program of the user's. Whatever records a process to look at it later
(a local-backend job's controller, a kernel's owner and its SSH tunnel) records both,
``started(pid)`` when the process starts, and asks ``alive`` or ``signal_group`` with
both; a Jupyter server, known by its runtime file only, is asked ``started_by`` the
file's time. A pid now held by a process that started at another time is not the one
recorded: it is never shown as running and never signalled. The start time is psutil's
``create_time()`` (on Linux, the boot time plus the start in clock ticks from
``/proc/PID/stat``: the same value every time it is read for the same process).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal

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
    """Whether the process recorded as (``pid``, ``started_at``) still runs: the pid is held
    by a process that started then and has not ended (a zombie has ended). Without a
    recorded start time nothing is known to run: no pid alone ever decides."""
    try:
        number, recorded = int(str(pid)), float(str(started_at))
        process = psutil.Process(number)
        same = math.isclose(process.create_time(), recorded, rel_tol=0.0, abs_tol=SAME_START_S)
        return same and process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except (TypeError, ValueError, psutil.Error):
        return False


def started_by(pid: object, moment: float) -> bool:
    """Whether process ``pid`` runs and had started by ``moment``: for a process known only
    by a file it wrote (a Jupyter server's runtime file, its mtime), whose pid a process
    that started after the file cannot be."""
    try:
        process = psutil.Process(int(str(pid)))
        return process.create_time() <= moment + FILE_CLOCK_SLACK_S and \
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
