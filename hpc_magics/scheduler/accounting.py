"""What Slurm's accounting (``sacct``) says about many jobs, in one call with a time-out.

``None`` means "accounting unreachable" (disabled, slurmdbd down, a time-out): callers
must never read it as "ended" or "failed".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import HpcMagicsError
from ..core.jobs import normalize_state
from . import commands
from .queue import slurm_timestamp

SACCT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class AccountingRecord:
    job_id: str  # as sacct spells it: 123, 123_4, 123_[5-9], 123+0
    state: str
    submit_time: float | None


def parse_sacct(text: str) -> tuple[AccountingRecord, ...]:
    """``JobID|State|Submit`` lines (``sacct -n -X -P``); malformed lines are skipped.

    A reused job id gives several records: all are kept, the caller picks by submit time.
    """
    records = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 2 or not parts[0] or not parts[1]:
            continue
        submit = slurm_timestamp(parts[2]) if len(parts) > 2 else None
        records.append(AccountingRecord(parts[0], normalize_state(parts[1]), submit))
    return tuple(records)


def sacct_records(job_ids: Sequence[str]) -> tuple[AccountingRecord, ...] | None:
    """One ``sacct`` call for all ``job_ids``; ``None`` when accounting is unreachable."""
    if not job_ids:
        return ()
    try:
        result = commands.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State,Submit",
                               "-j", ",".join(job_ids)], timeout=SACCT_TIMEOUT_S)
    except HpcMagicsError:
        return None
    if not result.ok:
        return None
    return parse_sacct(result.stdout)
