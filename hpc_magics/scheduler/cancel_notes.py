"""The cancels this process sent, until Slurm confirms them: the watcher passes every state
it decides through ``CancelNotes.since_cancel``, under its own lock."""

from __future__ import annotations

from dataclasses import replace

from ..core.jobids import same_job
from .job_status import JobStatus

# a job this process cancelled, while no squeue asked since says what became of it
CANCEL_SENT = "cancel sent; waiting for Slurm to confirm"


class CancelNotes:
    def __init__(self) -> None:
        self._at: dict[str, float] = {}  # job id → when our scancel of it returned

    def note(self, job_id: str, at: float) -> None:
        self._at[job_id] = max(at, self._at.get(job_id, 0.0))

    def since_cancel(self, job_id: str, status: JobStatus) -> JobStatus:
        """``status`` of a job this process cancelled, unless it is newer than the cancel.

        A state from a squeue asked before our scancel returned (or the last state standing,
        squeue being slow or accounting lagging) is not what Slurm says any more: a started
        job shows as COMPLETING (squeue's CG after a scancel), a queued one keeps its state,
        both noted ``CANCEL_SENT``, until a squeue asked after the scancel lists it, or a
        final state comes (sacct, the folder, gone)."""
        at = max((t for cancelled, t in self._at.items() if same_job(cancelled, job_id)),
                 default=None)
        if at is None:
            return status
        if status.final:
            self._at.pop(job_id, None)
            return status
        if status.source == "squeue" and status.detail_at >= at:
            return status  # Slurm's own answer, asked after the cancel
        state = "COMPLETING" if status.phase == "running" else status.state
        return replace(status, state=state, source="scancel", note=CANCEL_SENT)
