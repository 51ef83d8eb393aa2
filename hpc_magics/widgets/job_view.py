"""Pure view model of a job handle: what the widget shows, with no widget imports;
``view_of`` makes it from a handle's watcher snapshot."""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.jobs import phase, plain_reason
from ..core.units import format_clock, format_duration
from ..jobfacts import end_line
from ..jobfolder.files import SEGMENT_FILE

PHASE_COLOURS = {"done": "#2e7d32", "failed": "#c62828", "running": "#1565c0",
                 "pending": "#6d4c41", "ended": "#616161"}  # ended: how is unknown


@dataclass(frozen=True)
class JobView:
    job_id: str
    name: str
    state: str
    backend: str
    folder: str
    fetched: bool
    # from the watcher's last queue entry (nothing once the job has left the queue)
    reason: str = ""
    start_time: float | None = None  # pending: Slurm's estimate; running: the start
    elapsed_s: float | None = None
    time_limit_s: float | None = None
    node_list: str = ""
    note: str = ""  # the watcher's note, e.g. "accounting unreachable"
    # why it ended, with the fix (core/jobs.py: the notebook's error says the same)
    end_note: str = ""
    log: str = ""  # the job's output log (the labextension opens it on a click)
    segment: str = ""  # a checkpointed job's "segment 2 of ≤4"

    @property
    def phase(self) -> str:
        return phase(self.state)

    @property
    def can_cancel(self) -> bool:
        return self.phase in {"pending", "running"}

    @property
    def can_fetch(self) -> bool:
        return self.phase in {"done", "failed", "ended"}

    @property
    def progress(self) -> float | None:
        """Elapsed / time limit while running (0..1); ``None`` without a limit."""
        if self.phase != "running" or not self.time_limit_s or self.elapsed_s is None:
            return None
        return min(1.0, max(0.0, self.elapsed_s / self.time_limit_s))

    def status_html(self) -> str:
        colour = PHASE_COLOURS[self.phase]
        where = ("local executor (no Slurm here)" if self.backend == "local" else "Slurm")
        fetched = " · results fetched" if self.fetched else ""
        note = f" · {html.escape(self.note)}" if self.note else ""
        return (f"<b>job <code>{html.escape(self.job_id)}</code></b> {html.escape(self.name)} · "
                f"<span style='color:{colour};font-weight:bold'>{html.escape(self.state)}</span>"
                f" · {where}{fetched}{note}<br><small>{self.links_html()}</small>"
                + (f" <small>· {html.escape(self.segment)}</small>" if self.segment else ""))

    def links_html(self) -> str:
        """``log · folder``: links the labextension opens in JupyterLab (the file browser
        at the folder, the log as a document); the whole path shows on hovering."""
        links = [(kind, path) for kind, path in (("log", self.log), ("folder", self.folder))
                 if path]
        return " · ".join(
            f"<a href='#' data-hpc-magics-open='{kind}' data-path='{html.escape(_as_server(path))}'"
            f" title='{html.escape(path)}'>{kind}</a>" for kind, path in links)

    def story(self, now: float | None = None) -> str:
        """One line of what is going on: why it waits and until when, or where it runs and
        how far into its time it is. Once it has ended, why, when Slurm ended it (else
        empty: no stale running line)."""
        now = time.time() if now is None else now
        if self.phase == "pending" and self.backend != "local":
            why = plain_reason(self.reason) if self.reason else \
                "waiting for the scheduler to look at it"
            text = f"pending: {why}"
            if self.start_time is not None and self.start_time > now:
                at = format_clock(self.start_time, now)  # with its date on another day
                text += f" · estimated start {at} (in {format_duration(self.start_time - now)})"
            return text
        if self.phase == "running":
            parts = []
            if self.node_list:
                parts.append(f"on {self.node_list}")
            if self.elapsed_s is not None:
                limit = f" of {format_duration(self.time_limit_s)}" if self.time_limit_s else ""
                parts.append(f"{format_duration(self.elapsed_s)}{limit}")
                if self.time_limit_s:
                    parts.append(f"{format_duration(self.time_limit_s - self.elapsed_s)} left")
            return "running " + " · ".join(parts) if parts else "running"
        if self.end_note:
            return f"{self.state}: {self.end_note}"
        return ""


def _as_server(path: str) -> str:
    """``path`` as jupyter_server writes its root in the page (``serverRoot``): the home
    as ``~``, so the labextension can tell where it lies in the root."""
    home = str(Path.home())
    return "~" + path[len(home):] if path.startswith(home + "/") else path


def view_of(handle: Any, end_state: str | None = None) -> JobView:
    """The handle's snapshot as the widget shows it; ``end_state``: the state its steps
    tell for a FAILED job (a step killed for memory), as the monitor found it."""
    status = handle.status
    detail = status.detail
    state = end_state if end_state and status.final else status.state
    # its stdout log (rank 0), as the backend names it: there once the job started
    logs = handle.backend.log_paths(handle.job_id, handle.folder)
    elapsed: float | None = None
    if detail is not None and detail.elapsed_s is not None:
        # the queue's figure is from its last answer: count on from there while it runs
        running = status.phase == "running"
        elapsed = detail.elapsed_s + (max(0.0, time.time() - status.detail_at)
                                      if running and status.detail_at else 0.0)
    return JobView(handle.job_id, handle.name, state, handle.backend.name,
                   str(handle.folder.path), handle.fetched,
                   reason=detail.reason if detail else "",
                   start_time=detail.start_time if detail else None,
                   elapsed_s=elapsed, time_limit_s=detail.time_limit_s if detail else None,
                   node_list=detail.node_list if detail else "", note=status.note,
                   end_note=end_line(handle.folder, handle.job_id, state)
                   if status.final else "", log=str(next(iter(logs), "")),
                   segment=segment_note(handle.folder.path))


def segment_note(folder: Path) -> str:
    """``segment 2 of ≤4`` once a checkpointed job has started, else ``""``: from
    segment.json (rank 0 writes it as each segment starts), no scheduler call."""
    try:
        data = json.loads((folder / SEGMENT_FILE).read_text())
        return f"segment {int(data['segment'])} of ≤{int(data['of_at_most'])}"
    except (OSError, ValueError, KeyError, TypeError):
        return ""
