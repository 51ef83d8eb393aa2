"""How a request reads in %hpc_resources, where the workshop notebooks showed it wrong: the
cost of a job of a few minutes ("≈ 0 node-h at most; 0 core-h; charged 0 core-h" for the
1-minute checkpoint job) and ``--mem 0`` (shown as "0M" in the multi-node notebook)."""

from __future__ import annotations

from hpc_magics.core.cost import cost_line
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import ResourceRequest, as_rows


def test_a_one_minute_job_costs_more_than_nothing() -> None:
    request = ResourceRequest(profile="lab", partition="debug", time_s=60, mem_mb=1024)
    line = cost_line(request, load_profile("lab"))
    # 1/60 of a node-hour, one core of it
    assert line == "≈ 0.017 node-h at most; 0.017 core-h; charged 0.017 core-h (billed by the core)"


def test_whole_and_tenths_stay_as_they_were() -> None:
    two_hours = ResourceRequest(profile="lab", partition="debug", time_s=7200, nodes=1)
    assert cost_line(two_hours).startswith("≈ 2 node-h at most")
    ten_minutes = ResourceRequest(profile="lab", partition="debug", time_s=600, nodes=2)
    assert cost_line(ten_minutes).startswith("≈ 0.3 node-h at most")


def test_mem_zero_reads_as_the_whole_node() -> None:
    whole = dict(as_rows(ResourceRequest(profile="narval", mem_mb=0)))
    assert whole["mem"] == "0 (the whole node's memory)"
    assert dict(as_rows(ResourceRequest(profile="lab", mem_mb=1024)))["mem"] == "1G"
    assert dict(as_rows(ResourceRequest(profile="lab")))["mem"] == "(cluster default)"
