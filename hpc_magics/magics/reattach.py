"""A kernel started again takes up its notebook's running jobs by itself.

At ``%load_ext`` (or the first cell, when loaded by a configuration) every pending or running
job whose ``meta.json`` names this notebook (``JPY_SESSION_NAME``) is shown in that cell with
its widget and live output (``widgets/live_output.follow_output``) and becomes the
session's. One look at the index and job folders, one shared watcher poll. Details:
docs/how-it-works.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

FOLLOWED: set[Path] = set()  # the job folders this process has taken up already


def reattach_when_a_cell_runs(shell: Any) -> None:
    """Take up the notebook's running jobs now, in the cell that loads the extension, or
    in the first cell run when none does (an extension a configuration loads)."""
    if getattr(shell, "kernel", None) is None or not os.environ.get("JPY_SESSION_NAME"):
        return  # a terminal's IPython, a kernel outside a notebook: nowhere to show it
    header = (getattr(shell, "parent_header", None) or {}).get("header") or {}
    if header.get("msg_type") == "execute_request":
        reattach(shell)
        return

    def first_cell(*_: Any) -> None:
        shell.events.unregister("pre_run_cell", first_cell)
        reattach(shell)

    shell.events.register("pre_run_cell", first_cell)


def reattach(shell: Any) -> list[Any]:
    """Show each of the notebook's pending or running jobs (oldest first) with its live
    output; their handles."""
    from ..core.errors import HpcMagicsError
    from ..widgets.live_output import follow_output
    from .job_actions import show_handle

    session = shell.magics_manager.registry["HpcMagicsKernel"]
    try:
        handles = running_jobs(os.environ["JPY_SESSION_NAME"])
    except HpcMagicsError as error:  # a scheduler not answering never fails %load_ext
        print(f"[hpc_magics] this notebook's running jobs not taken up ({error}): "
              "%hpc_live JOB follows one", file=sys.stderr)
        return []
    for handle in handles:
        FOLLOWED.add(handle.folder.path)
        session.remember(handle)
        print(f"[hpc_magics] job {handle.job_id} ({handle.name}), sent from this notebook, "
              f"is {handle.status.state}: its output follows here")
        show_handle(handle)
        if handle.folder.meta().get("kind", "cell") == "cell":  # a sweep shows its table
            follow_output(handle, shell)
    return handles


def running_jobs(notebook: str) -> list[Any]:
    """Handles of the jobs this notebook's cells sent that are still pending or running,
    oldest first: those whose folder says neither over nor holds results, then asked of the
    watcher in one poll (the user's shared queue view)."""
    from ..core.jobs import is_final
    from ..scheduler import job_index

    here = _same_path(notebook)
    maybe = []
    for folder in job_index.own_folders(job_index.entries(kinds=("cell", "sweep"))):
        meta = folder.meta()
        if folder.path not in FOLLOWED and _same_path(str(meta.get("notebook") or "")) == here \
                and not is_final(str(meta.get("state") or "")) and not folder.has_results():
            maybe.append(folder)
    if not maybe:
        return []
    from ..attach import handle_of
    from ..scheduler.watcher import watcher

    polled = watcher().poll(maybe)
    return [handle_of(folder) for folder in maybe if not polled[folder.path].final]


def _same_path(path: str) -> str:
    """A notebook's path as a comparison sees it (the kernel's own, or a job's record)."""
    return os.path.realpath(path) if path else ""
