"""Pure view model of the ``%hpc_server`` widget: what it says, from a ``ServerStatus``."""

from __future__ import annotations

import html
from dataclasses import dataclass

from ..core.units import format_clock as clock
from ..core.units import format_duration
from ..scheduler.server_status import ServerStatus

# How the Stop button would stop things, decided by the magic from what it found.
STOP_SERVER = "server"  # POST /hpc-magics/server/stop to the server that runs this kernel
STOP_JOB = "job"  # a server without the extension runs this kernel: scancel its job
STOP_KERNEL = "kernel"  # a Slurm kernel in its own job: scancel that job
STOP_STEP = "step"  # a Slurm kernel in the user's allocation: its step only
STOP_NOTHING = "none"


@dataclass(frozen=True)
class ServerView:
    headline: str
    rows: tuple[tuple[str, str], ...]
    warning: str | None
    can_stop: bool
    stop_label: str
    confirm_text: str

    def html(self) -> str:
        rows = "".join(f"<tr><td style='padding-right:1em'>{html.escape(k)}</td>"
                       f"<td>{html.escape(v)}</td></tr>" for k, v in self.rows)
        warning = (f"<div style='color:#c62828;font-weight:bold'>{html.escape(self.warning)}"
                   "</div>" if self.warning else "")
        return f"<b>{html.escape(self.headline)}</b>{warning}<table>{rows}</table>"


def server_view(status: ServerStatus, now: float, stop_target: str) -> ServerView:
    """What to show at ``now`` (a later moment than ``status.now`` counts down locally)."""
    left = None if status.end_time is None else max(0, int(status.end_time - now))
    rows: list[tuple[str, str]] = []
    warning = None
    if status.in_slurm_job:
        name = f" ({status.job_name})" if status.job_name else ""
        rows.append(("Slurm job", f"{status.job_id}{name}"))
        if status.partition:
            nodes = f", {status.nodes} node{'s' if status.nodes != 1 else ''}" \
                if status.nodes else ""
            rows.append(("Partition", f"{status.partition}{nodes}"))
        parts = [f"job {status.job_id}"]
        if left is not None and status.end_time is not None:
            rows.append(("Ends", f"{clock(status.end_time, now)} (in {format_duration(left)})"))
            parts.append(f"{format_duration(left)} left")
            soon = [m for m in status.warn_minutes if left <= m * 60]
            if soon:
                warning = (f"Less than {min(soon)} minutes left: save your work now, the job "
                           f"ends at {clock(status.end_time, now)}.")
        used = status.node_hours_used if status.start_time is None or status.nodes is None \
            else status.nodes * max(0.0, now - status.start_time) / 3600.0
        if used is not None:
            total = f" of {status.node_hours_total:.1f}" if status.node_hours_total else ""
            rows.append(("Node-hours", f"{used:.1f} used{total}"))
            parts.append(f"{used:.1f} node-h")
        headline = " · ".join(parts)
    else:
        headline = "This Jupyter server is not running in a Slurm job"
    if status.idle_stop_minutes and status.idle_stop_at is not None:
        rows.append(("Idle stop", f"after {status.idle_stop_minutes:g} min without activity "
                                  f"(at {clock(status.idle_stop_at, now)} if nothing happens)"))
    can_stop, stop_label, confirm_text = _stop_texts(status, stop_target)
    return ServerView(headline=headline, rows=tuple(rows), warning=warning, can_stop=can_stop,
                      stop_label=stop_label, confirm_text=confirm_text)


def _stop_texts(status: ServerStatus, stop_target: str) -> tuple[bool, str, str]:
    """Whether Stop is possible, its label, and the confirmation question."""
    unsaved = "Save your notebooks first: unsaved changes are lost."
    sbatch = " Jobs you submitted keep running, except any you tick below to cancel."
    lost = "The kernel's variables are lost; the Jupyter server and your notebooks stay."
    if stop_target == STOP_SERVER:
        job = f" and cancel its Slurm job {status.job_id}" if status.in_slurm_job else ""
        return True, "Stop my server", f"Stop this Jupyter server{job}? {unsaved}{sbatch}"
    if stop_target == STOP_KERNEL and status.in_slurm_job:
        return True, f"Cancel job {status.job_id}", (
            f"Cancel Slurm job {status.job_id}, which runs only this kernel? {lost}")
    if stop_target == STOP_STEP and status.in_slurm_job:
        return True, "Stop this kernel", (
            f"End this kernel's step in your allocation {status.job_id}? The allocation "
            f"keeps running. {lost}")
    if stop_target == STOP_JOB and status.in_slurm_job:
        return True, f"Cancel job {status.job_id}", (
            f"Cancel Slurm job {status.job_id}, which runs this Jupyter server and this "
            f"notebook's kernel? {unsaved}{sbatch}")
    return False, "Stop my server", \
        "No running Jupyter server or Slurm job of this kernel was found."
