"""``%hpc_jobs --all`` lists the jobs that ended today from one sacct answer and the job
index: each record finds its folders among the index entries of its own id, never by a
search of the whole index (records x entries id parses: a user with thousands of jobs that
day waited minutes; a clean clone's test timed out at 300 s).

Thousands of ended jobs cannot be made on the test cluster on demand within a test, so the
sacct answer and the index are built here; the count is of the id comparisons made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpc_magics.core import jobids
from hpc_magics.magics import job_list
from hpc_magics.scheduler.accounting import AccountingRecord
from hpc_magics.scheduler.job_index import Entry

JOBS = 2000


def test_ended_today_compares_each_record_with_its_own_ids_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    records = [AccountingRecord(str(100 + n), "COMPLETED", None) for n in range(JOBS)]
    index = [Entry(tmp_path / f"gone-{n}", str(100 + n), "lab", 0.0, None) for n in range(JOBS)]
    monkeypatch.setattr(job_list, "_recent_jobs", lambda interval_s: records)
    compared: list[Any] = []
    real_same_job = jobids.same_job

    def counted(wanted: str, listed: str) -> bool:
        compared.append((wanted, listed))
        return real_same_job(wanted, listed)

    monkeypatch.setattr("hpc_magics.scheduler.job_index.same_job", counted)
    rows, note = job_list._ended_today(lambda job_id: True, index)
    assert note == "" and len(rows) == JOBS
    assert all(wanted == listed for wanted, listed in compared), compared[:5]
    assert len(compared) == JOBS  # one per record: its own entry, never the whole index
