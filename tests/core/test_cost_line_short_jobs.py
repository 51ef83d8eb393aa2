"""The cost line of a job of a few minutes (the workshop's 1-minute checkpoint job showed
"≈ 0 node-h at most; 0 core-h; charged 0 core-h")."""

from __future__ import annotations

from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.core.sbatch import cost_line


def test_a_one_minute_job_costs_more_than_nothing() -> None:
    request = ResourceRequest(profile="lab", partition="debug", time_s=60, mem_mb=1024)
    line = cost_line(request, load_profile("lab"))
    # 1/60 of a node-hour, one core of it
    assert line == "≈ 0.02 node-h at most; 0.02 core-h; charged 0.02 core-h (billed by the core)"


def test_whole_and_tenths_stay_as_they_were() -> None:
    two_hours = ResourceRequest(profile="lab", partition="debug", time_s=7200, nodes=1)
    assert cost_line(two_hours).startswith("≈ 2 node-h at most")
    ten_minutes = ResourceRequest(profile="lab", partition="debug", time_s=600, nodes=2)
    assert cost_line(ten_minutes).startswith("≈ 0.3 node-h at most")
