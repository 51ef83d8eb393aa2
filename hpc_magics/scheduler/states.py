"""States of many jobs from as few scheduler calls as possible, all with time-outs.

Live jobs come from the user's shared ``squeue`` view (``JobQueue``: one call per interval
for all kernels, tabs and the server together).  A job that has left the queue is asked
about once, in one ``sacct`` call for all such jobs; its final state is then kept by the
caller (the job folder), so no job is ever asked about twice once it has ended.  Without
accounting, a job gone from the queue is ``ENDED``: Slurm no longer says how.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ..core.errors import HpcMagicsError
from ..core.jobs import normalize_state
from . import commands
from .queue import JobQueue

SACCT_TIMEOUT_S = 20.0
# sacct lags the scheduler by up to ~1.5 s; a job it has never heard of this long after
# submission is not going to appear (purged, or another cluster's database)
SACCT_GRACE_S = 60.0
# squeue's answer must postdate the submission by this much before "not listed" means "gone"
QUEUE_MARGIN_S = 1.0


def parse_sacct(text: str) -> dict[str, str]:
    """``JobID|State`` lines (``sacct -n -X -P -o JobID,State``) → job id → state."""
    states: dict[str, str] = {}
    for line in text.splitlines():
        job_id, _, state = line.strip().partition("|")
        if job_id and state:
            states[job_id] = normalize_state(state)
    return states


def sacct_states(job_ids: list[str]) -> dict[str, str] | None:
    """One ``sacct`` call for all ``job_ids``; ``None`` when accounting is unavailable."""
    try:
        result = commands.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State",
                               "-j", ",".join(job_ids)], timeout=SACCT_TIMEOUT_S)
    except HpcMagicsError:
        return None
    if not result.ok:
        return None
    return parse_sacct(result.stdout)


def job_states(submitted_at: Mapping[str, float], queue: JobQueue | None = None,
               max_age_s: float | None = None) -> dict[str, str]:
    """Current state of each job id (``submitted_at``: job id → epoch of submission)."""
    queue = queue or JobQueue()
    view = queue.view(max_age_s)
    states: dict[str, str] = {}
    gone: list[str] = []
    for job_id, submitted in submitted_at.items():
        snapshot = view.find(job_id)
        if snapshot is not None:
            states[job_id] = normalize_state(snapshot.state)
        elif view.updated is None or view.updated < submitted + QUEUE_MARGIN_S:
            states[job_id] = "PENDING"  # submitted after the last squeue: not seen yet
        else:
            gone.append(job_id)
    if gone:
        accounted = sacct_states(gone)
        now = time.time()
        for job_id in gone:
            if accounted is None:
                states[job_id] = "ENDED"
            elif job_id in accounted:
                states[job_id] = accounted[job_id]
            elif now - submitted_at[job_id] > SACCT_GRACE_S:
                states[job_id] = "ENDED"
            else:
                states[job_id] = "COMPLETING"  # sacct has not caught up yet
    return states
