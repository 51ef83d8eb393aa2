"""``%%sbatch``: the job's output in the cell while it runs (``widgets/live_output.py``).

The handle keeps the live view (``handle.live``): its fetch then leaves the output to it
rather than printing it a second time.
"""

from __future__ import annotations

from typing import Any

from ..jobfolder.live_stream import STREAM_FILE


def live_output(handle: Any, shell: Any) -> Any:
    """Follow the job's output as it comes (``handle.live``), not shown yet; None where no
    front end renders a widget (a terminal's IPython): the fetch prints it at the end."""
    from ..widgets.live_output import LiveOutput

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
