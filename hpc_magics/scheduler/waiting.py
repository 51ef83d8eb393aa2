"""Why pending jobs wait and when Slurm expects them to start: one ``squeue --start`` for
all the jobs asked about (never one call per job), reasons in plain words
(``core/pending_reasons.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import HpcMagicsError
from ..core.pending_reasons import plain_reason
from . import commands


@dataclass(frozen=True)
class Waiting:
    job_id: str
    reason: str  # Slurm's code, e.g. "Priority"
    start: str  # Slurm's expected start ("2026-11-23T19:00:00"), "" when it has none

    @property
    def plain(self) -> str:
        return plain_reason(self.reason)

    def __str__(self) -> str:
        when = f"; expected to start {self.start.replace('T', ' ')}" if self.start else ""
        return f"pending: {self.plain}{when}"


def pending(job_ids: Iterable[str]) -> dict[str, Waiting] | str:
    """Pending jobs among ``job_ids`` → why and when; or why Slurm could not be asked."""
    ids = [str(j) for j in job_ids]
    if not ids:
        return {}
    try:
        answer = commands.run(["squeue", "--start", "-h", "-t", "PENDING", "-j", ",".join(ids),
                               "-o", "%i|%r|%S"], timeout=20)
    except HpcMagicsError as error:
        return str(error)
    if not answer.ok:
        return answer.first_error_line()
    found = {}
    for line in answer.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            job, reason, start = parts
            found[job] = Waiting(job, reason, "" if start in {"N/A", "Unknown"} else start)
    return found
