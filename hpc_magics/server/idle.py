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
from dataclasses import dataclass
from typing import Any

PASSIVE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class KernelActivity:
    execution_state: str
    last_activity: float | None


def idle_stop_at(*, last_user_activity: float, kernels: Iterable[KernelActivity],
                 other_activity: Iterable[float], idle_seconds: float, now: float) -> float:
    """Epoch second at which the server counts as idle for ``idle_seconds``."""
    latest = last_user_activity
    for kernel in kernels:
        if kernel.execution_state == "busy":
            latest = max(latest, now)
        elif kernel.last_activity is not None:
            latest = max(latest, kernel.last_activity)
    for moment in other_activity:
        latest = max(latest, moment)
    return latest + idle_seconds


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


def server_kernels(serverapp: Any) -> list[KernelActivity]:
    """Execution state and last activity of every kernel the server runs."""
    manager = serverapp.kernel_manager
    found = []
    for kernel_id in list(manager.list_kernel_ids()):
        try:
            kernel = manager.get_kernel(kernel_id)
        except KeyError:
            continue
        found.append(KernelActivity(
            execution_state=str(getattr(kernel, "execution_state", "unknown")),
            last_activity=_epoch(getattr(kernel, "last_activity", None)),
        ))
    return found


def other_activity(serverapp: Any) -> list[float]:
    """Terminal and extension activity the server records (``*_last_activity`` settings).

    ``api_last_activity`` is left out: every polling GET updates it.
    """
    settings = serverapp.web_app.settings
    moments = [_epoch(v) for k, v in settings.items()
               if k.endswith("_last_activity") and k != "api_last_activity"]
    moments += [_epoch(v) for v in settings.get("last_activity_times", {}).values()]
    moments.append(_epoch(getattr(serverapp.kernel_manager, "last_kernel_activity", None)))
    return [m for m in moments if m is not None]
