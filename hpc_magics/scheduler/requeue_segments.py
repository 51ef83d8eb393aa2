"""The segments of a requeued job: ``sacct --duplicates`` lists each run of one job id
(REQUEUED ones first, the current one last), asked on demand, never in a loop."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import HpcMagicsError
from ..core.jobs import normalize_state
from . import commands
from .slurm_text import slurm_timestamp

SACCT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Segment:
    index: int  # 1, 2, …: the order Slurm ran them in
    state: str  # REQUEUED for a segment that ended in a requeue
    start: float | None  # epoch seconds, None while pending
    end: float | None  # None while running


def parse_segments(text: str, job_id: str) -> tuple[Segment, ...]:
    """``JobID|State|Start|End`` lines of ``sacct -n -X -P -D``; other ids are skipped."""
    rows = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or parts[0] != job_id:
            continue
        rows.append((normalize_state(parts[1]), slurm_timestamp(parts[2]),
                     slurm_timestamp(parts[3])))
    rows.sort(key=lambda row: row[1] if row[1] is not None else float("inf"))
    return tuple(Segment(i, state, start, end) for i, (state, start, end) in enumerate(rows, 1))


def job_segments(job_id: str) -> tuple[Segment, ...] | None:
    """The job's segments; ``None`` when accounting cannot be asked (never "no segments")."""
    try:
        result = commands.run(["sacct", "-n", "-X", "-P", "-D", "-o", "JobID,State,Start,End",
                               "-j", job_id], timeout=SACCT_TIMEOUT_S)
    except HpcMagicsError:
        return None
    return parse_segments(result.stdout, job_id) if result.ok else None
