"""``%%sbatch``: the job's output in the cell while it runs (``widgets/live_output.py``).

The handle keeps the live view (``handle.live``): its fetch then leaves the output to it
rather than printing it a second time.
"""

from __future__ import annotations

from typing import Any

from ..jobfolder.live_stream import STREAM_FILE


def live_output(handle: Any) -> Any:
    """A live view of the job's output, not shown or started yet (ipywidgets needed)."""
    from ..widgets.live_output import LiveOutput

    def ended() -> bool:  # the folder and the watcher's latest snapshot: no scheduler call
        return bool(handle.folder.has_results() or handle.status.final)

    return LiveOutput(handle.folder.path / STREAM_FILE, ended)


def follow_output(handle: Any, shell: Any) -> Any:
    """Show the job's output under its widget as it comes; None where no front end renders
    a widget (a terminal's IPython, no ipywidgets): the fetch prints it at the end."""
    from IPython.display import display

    if getattr(shell, "kernel", None) is None:
        return None
    try:
        live = live_output(handle)
    except ImportError:
        return None
    display(live.view)
    handle.live = live
    live.start()
    return live
