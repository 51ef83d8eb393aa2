"""Slurm job ids (plain, array, heterogeneous) and how scheduler entries are matched to jobs."""

from __future__ import annotations

import pytest

from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.core.jobids import parse_job_id, require_job_id, same_job
from hpc_magics.core.jobs import is_final, phase
from hpc_magics.scheduler.job_status import combined_state
from hpc_magics.scheduler.queue import QueueView
from hpc_magics.scheduler.slurm_text import parse_squeue


@pytest.mark.parametrize(("text", "base", "tasks", "het"), [
    ("123", "123", None, None),
    ("123_4", "123", "4", None),
    ("123_[1-5]", "123", "[1-5]", None),
    ("123_[1,3,7-9%2]", "123", "[1,3,7-9%2]", None),
    ("123+0", "123", None, "0"),
    (" 77+12 ", "77", None, "12"),
])
def test_parse_job_id(text: str, base: str, tasks: str | None, het: str | None) -> None:
    job = parse_job_id(text)
    assert job is not None and (job.base, job.tasks, job.het) == (base, tasks, het)
    assert str(job) == text.strip()


@pytest.mark.parametrize("text", ["", "abc", "12_x", "1;scancel 2", "12+", "_3", "12_[a]"])
def test_not_job_ids(text: str) -> None:
    assert parse_job_id(text) is None
    with pytest.raises(HpcMagicsError, match="is not a Slurm job id: use 123"):
        require_job_id(text)


def test_array_tasks_ranges_and_het_components_match_their_job() -> None:
    assert parse_job_id("9_[1-3,7-11:2%4]").task_numbers == {1, 2, 3, 7, 9, 11}  # type: ignore[union-attr]
    assert same_job("123", "123_4") and same_job("123", "123_[5-9]") and same_job("123", "123+1")
    assert same_job("123_7", "123_[5-9]") and not same_job("123_4", "123_[5-9]")
    assert same_job("123_[1-5]", "123_3") and not same_job("123_[1-5]", "123_6")
    assert same_job("123+0", "123+0") and not same_job("123+0", "123+1")
    assert not same_job("123+0", "123") and not same_job("12", "123")
    assert not same_job("123", "1234")


def test_squeue_lines_with_array_and_het_ids() -> None:
    squeue = ("500_[3-5]|PENDING|debug|1|0:00|1:00|N/A|Priority|N/A|2026-11-22T14:10:01|arr\n"
              "500_2|RUNNING|debug|1|0:03|1:00|N/A|None|N/A|2026-11-22T14:10:01|arr\n"
              "600+0|RUNNING|debug|1|0:03|1:00|N/A|None|N/A|2026-11-22T14:11:01|het\n"
              "600+1|RUNNING|long|1|0:03|1:00|N/A|None|N/A|2026-11-22T14:11:01|het\n")
    view = QueueView(jobs=parse_squeue(squeue), updated=1.0)
    assert [j.job_id for j in view.find_all("500")] == ["500_[3-5]", "500_2"]
    assert view.find("500_4") is not None and view.find("500_4").state == "PENDING"  # type: ignore[union-attr]
    assert view.find("500_1") is None
    assert [j.job_id for j in view.find_all("600")] == ["600+0", "600+1"]
    assert [j.job_id for j in view.find_all("600+1")] == ["600+1"]


def test_ended_is_over_but_not_a_failure() -> None:
    assert is_final("ENDED") and phase("ENDED") == "ended"
    assert phase("FAILED") == "failed" and phase("COMPLETED") == "done"


def test_held_and_paused_states_are_not_ends() -> None:
    # 22.05's squeue for a SPECIAL_EXIT job: "(job requeued in held state)"; it comes back
    assert not is_final("SPECIAL_EXIT") and phase("SE") == "pending"
    # a suspended or stopped job keeps its allocation and goes on when resumed
    assert [phase(s) for s in ("SUSPENDED", "ST")] == ["running", "running"]
    assert not is_final("SUSPENDED")


def test_combined_state_of_an_array() -> None:
    assert combined_state(["COMPLETED", "PENDING", "RUNNING"]) == "RUNNING"
    assert combined_state(["COMPLETED", "PENDING"]) == "PENDING"
    assert combined_state(["COMPLETED", "COMPLETED"]) == "COMPLETED"
    assert combined_state(["COMPLETED", "FAILED", "CANCELLED"]) == "FAILED"
    assert combined_state(["COMPLETED", "ENDED"]) == "ENDED"
