"""Pure view model of a job handle: what the widget shows, with no widget imports."""

from __future__ import annotations

import html
from dataclasses import dataclass

from ..core.jobs import phase

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
    note: str = ""  # the watcher's, e.g. "scheduler unreachable, retrying"

    @property
    def phase(self) -> str:
        return phase(self.state)

    @property
    def can_cancel(self) -> bool:
        return self.phase in {"pending", "running"}

    @property
    def can_fetch(self) -> bool:
        return self.phase in {"done", "failed", "ended"}

    def status_html(self) -> str:
        colour = PHASE_COLOURS[self.phase]
        where = ("local executor (no Slurm here)" if self.backend == "local" else "Slurm")
        fetched = " · results fetched" if self.fetched else ""
        note = f" <i>({html.escape(self.note)})</i>" if self.note else ""
        return (f"<b>job <code>{html.escape(self.job_id)}</code></b> {html.escape(self.name)} · "
                f"<span style='color:{colour};font-weight:bold'>{html.escape(self.state)}</span>"
                f"{note} · {where}{fetched}<br>"
                f"<small><code>{html.escape(self.folder)}</code></small>")
