"""Cost under each profile's billing rule, and pending reasons in plain words."""

from __future__ import annotations

import pytest

from hpc_magics.core.cost import billing_units, cost_line, estimate
from hpc_magics.core.jobs import PENDING_REASONS, plain_reason
from hpc_magics.core.jobscript import header_lines
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import ResourceRequest, updated


def cost_of(profile: str, **values: str) -> tuple[float | None, ...]:
    request = updated(ResourceRequest(profile=profile), values)
    cost = estimate(request, load_profile(profile))
    return cost.node_hours, cost.gpu_hours, cost.core_hours, cost.billed


def test_whole_node_partitions_bill_every_core() -> None:
    # Daint: one core asked, 288 billed; charged by the node
    assert cost_of("daint", partition="debug", time_s="30", nodes="2", cpus_per_task="1") == \
        (1.0, 0.0, 288.0, 1.0)


def test_shared_partitions_bill_what_is_asked() -> None:
    # SDumont sequana_gpu_shared: 12 cores for 4 hours, charged by the core
    assert cost_of("sdumont", partition="sequana_gpu_shared", gres="gpu:2", time_s="4h",
                   cpus_per_task="12") == (4.0, 8.0, 48.0, 48.0)
    # Alvis charges GPU-hours
    assert cost_of("alvis", gpus_per_node="A40:2", time_s="3h", nodes="2")[1:4:2] == (12.0, 12.0)


def test_tres_billing_weights_as_slurm_sums_them() -> None:
    assert billing_units("CPU=1.0,Mem=0.25G,GRES/gpu=2.0", cpus=4, mem_mb=8192, gpus=1,
                         nodes=1) == pytest.approx(4 + 2 + 2)
    request = updated(ResourceRequest(), {"time_s": "2h", "cpus_per_task": "4", "mem_mb": "8G"})
    line = cost_line(request, load_profile("lab"), "CPU=1.0,Mem=0.25G")
    assert "charged 12 billing-h" in line and "TRESBillingWeights" in line


def test_a_short_job_costs_more_than_nothing() -> None:
    # two minutes on one core of the test cluster: 1/30 node-h, not "0"
    request = updated(ResourceRequest(), {"time_s": "2", "mem_mb": "500M"})
    line = cost_line(request, load_profile("lab"))
    assert line.startswith("≈ 0.033 node-h at most; 0.033 core-h") and " 0 " not in line


def test_no_time_means_no_cost() -> None:
    assert "add -t" in cost_line(ResourceRequest(), load_profile("daint"))


def test_pending_reasons_in_plain_words() -> None:
    assert plain_reason("Priority") == "waiting for higher-priority jobs"
    assert plain_reason("(QOSMaxGRESPerUser)") == "you already use your GPU quota"
    assert plain_reason("QOSMaxMemoryPerUser") == "you already use your quota under this QOS"
    assert plain_reason("SomethingNew") == "SomethingNew"  # unknown codes as Slurm says them
    assert all(text and text[0].islower() for text in PENDING_REASONS.values())


def test_no_time_limit_is_said_as_the_script_says_it() -> None:
    """``-t 0`` is sbatch's no limit (``--time=UNLIMITED`` in the script): the cost line
    said "no time limit set ... (add -t)", as if -t had not been given."""
    unlimited = updated(ResourceRequest(), {"time_s": "0"})
    assert "#SBATCH --time=UNLIMITED" in header_lines(unlimited, load_profile("generic"))
    assert cost_line(unlimited) == ("no time limit (--time=UNLIMITED: the partition's "
                                    "maximum applies): cost unknown (-t 2h bounds it)")
