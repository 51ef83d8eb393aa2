"""Idle auto-stop: when did a person last do something on this server?

Real activity is a state-changing request (anything but GET/HEAD/OPTIONS: saving,
running, renaming, the "keep working" button), kernel or terminal activity, or a busy
kernel. Polling GETs, JupyterLab's own and ours, do not count: an open but untouched tab
must not keep a node allocated. Running Slurm jobs do not count either: they outlive the
server.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

PASSIVE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


# Requests a browser tab makes on its own, with nobody at the keyboard: JupyterLab saves
# its layout (PUT <base>lab/api/workspaces/...) every few seconds.
AUTOMATIC_PATHS = ("/lab/api/workspaces",)


def counts_as_activity(handler: Any) -> bool:
    """Did this finished request come from a person acting, not from polling?"""
    path = str(getattr(handler.request, "path", ""))
    return (
        handler.request.method not in PASSIVE_METHODS
        and not any(marker in path for marker in AUTOMATIC_PATHS)
        and bool(getattr(handler, "_track_activity", False))
        and getattr(handler, "_jupyter_current_user", None) is not None
        and handler.get_status() < 400
    )


def _epoch(value: Any) -> float | None:
    if isinstance(value, _dt.datetime):
        return value.timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    return None


def last_activity(last_user_activity: float, now: float, kernel_busy: bool,
                  recorded: Iterable[float]) -> float:
    """The latest activity: a person's last request, ``now`` while a kernel is busy (a long
    cell may print nothing), or the latest of the ``recorded`` activity."""
    return now if kernel_busy else max([last_user_activity, *recorded])


def server_activity(serverapp: Any) -> tuple[bool, list[float]]:
    """Whether a kernel is busy, and the kernel, terminal and extension activity the server
    records (``last_kernel_activity``, the ``*_last_activity`` settings, as jupyter_server's
    own ``last_activity`` reads them). ``api_last_activity`` is left out: every polling GET
    updates it."""
    manager = serverapp.kernel_manager
    busy = any(getattr(manager.get_kernel(kernel_id), "execution_state", "") == "busy"
               for kernel_id in manager.list_kernel_ids())
    settings = serverapp.web_app.settings
    moments = [v for k, v in settings.items()
               if k.endswith("_last_activity") and k != "api_last_activity"]
    moments += [*settings.get("last_activity_times", {}).values(),
                getattr(manager, "last_kernel_activity", None)]
    return busy, [moment for moment in map(_epoch, moments) if moment is not None]
