"""What to ask the watcher about a job handle: every task of a sweep (its latest attempt),
else the job itself; and the accounting figures of many handles from one shared sacct call.

A sweep's folder has no state of its own (its tasks have), so its figures are asked per task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.efficiency import Usage


def poll_targets(handle: Any) -> list[tuple[Any, str | None]]:
    """(folder, job id or None) pairs to poll for ``handle``."""
    targets = getattr(handle, "poll_targets", None)
    return list(targets()) if callable(targets) else [(handle.folder, handle._task)]


def usage_of(handles: Sequence[Any], max_age_s: float | None = None
             ) -> dict[int, tuple[Usage, ...] | None]:
    """Position in ``handles`` → its figures (one ``Usage`` per job or task, once: tasks
    cancelled before they started share one record, ``123_[2-3]``), for the handles whose
    every target has final figures; ``None``: accounting unreachable."""
    from .job_status import status_key
    from .watcher import watcher

    targets = [poll_targets(handle) for handle in handles]
    found = watcher().usage([t for some in targets for t in some], max_age_s)
    result: dict[int, tuple[Usage, ...] | None] = {}
    for position, some in enumerate(targets):
        keys = [status_key(folder, job_id) for folder, job_id in some]
        if any(key in found and found[key] is None for key in keys):
            result[position] = None
        elif keys and all(key in found for key in keys):
            figures = {u.job_id: u for key in keys for u in found[key] or ()}
            result[position] = tuple(figures.values())
    return result
