"""Rerun with more: ``hpc_magics.job().rerun(time=..., mem=...)``, the job widget's Rerun
button.

The reruns here are real jobs on the host's test cluster. That cluster does not confine
memory (tests/magics/test_cgroup_facts.py), so a job over its --mem cannot end
OUT_OF_MEMORY here: the memory rerun is a cell that fails by itself when its job has less
memory than it needs (it reads Slurm's SLURM_MEM_PER_NODE), and the OUT_OF_MEMORY reruns
(``rerun(mem=...)`` after a real one) are in test_cgroup_facts.py, which
runs on each --release cluster, where cgroups enforce --mem.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

# beside this file (pytest puts its folder on sys.path)
from test_monitor import lab

import hpc_magics
from hpc_magics.core.efficiency import Usage, advice, rerun_changes
from hpc_magics.core.errors import HpcMagicsError, InvalidRequest
from hpc_magics.core.profiles import Partition
from hpc_magics.jobfacts import partition_ran_in, suggested_rerun
from hpc_magics.widgets.job import JobWidget

__all__ = ["lab"]  # the fixture, shared with test_monitor.py

SHIPPED = "data = list(range(10))"
# the notebook's value changes after the submission: a rerun ships what the job had
CHANGED = "data = [0]"


def test_the_rerun_is_the_number_the_advice_names() -> None:
    oom = Usage("1", "OUT_OF_MEMORY", req_mem_mb=200)
    assert rerun_changes(oom) == {"mem": "1G"} and "--mem 1G should do" in advice(oom, None)
    assert rerun_changes(Usage("1", "OUT_OF_MEMORY", req_mem_mb=6144)) == {"mem": "12G"}
    timeout = Usage("1", "TIMEOUT", time_limit_s=3600)
    assert rerun_changes(timeout) == {"time": "2h"} and "-t 2h should do" in advice(timeout, None)
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=60)) == {"time": "2m"}
    # Slurm rounds a limit in seconds up to a minute: 5 s ran 60 s, so 2m, not 1m
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=5)) == {"time": "2m"}
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=90)) == {"time": "4m"}
    # and the advice says the minute Slurm gave, not the 5 s asked (a request's figure
    # where accounting's is missing)
    assert "it hit its time limit (1m): -t 2m should do" in advice(
        Usage("1", "TIMEOUT", time_limit_s=5), None)
    assert rerun_changes(Usage("1", "FAILED", req_mem_mb=200, time_limit_s=60)) == {}
    assert rerun_changes(Usage("1", "OUT_OF_MEMORY")) == {}  # how much it had: unknown


def test_the_rerun_never_asks_more_than_the_partition_has() -> None:
    """Twice the memory or time is offered only up to a node's memory and the partition's
    time limit (more would be refused); a job that had the most gets advice, no Rerun."""
    debug = Partition("debug", max_time_s=3600, mem_per_node_mb=8000)
    assert rerun_changes(Usage("1", "OUT_OF_MEMORY", req_mem_mb=6144), partition=debug) \
        == {"mem": "8000M"}
    assert rerun_changes(Usage("1", "OUT_OF_MEMORY", req_mem_mb=2048), partition=debug) \
        == {"mem": "4G"}
    whole = Usage("1", "OUT_OF_MEMORY", req_mem_mb=8000)
    assert rerun_changes(whole, partition=debug) == {}
    said = advice(whole, None, partition=debug)
    assert "all a node of partition debug has" in said and "--mem" not in said
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=2400), partition=debug) \
        == {"time": "1h"}
    two_days = Partition("long", max_time_s=2 * 86400)
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=86400 + 60), partition=two_days) \
        == {"time": "48h"}  # not 2880m
    odd = Partition("short", max_time_s=90 * 60)
    assert rerun_changes(Usage("1", "TIMEOUT", time_limit_s=3600), partition=odd) \
        == {"time": "90m"}  # not 2h, over the limit
    longest = Usage("1", "TIMEOUT", time_limit_s=3600)
    assert rerun_changes(longest, partition=debug) == {}
    assert "the most partition debug gives: %%sbatch --checkpoint" in advice(
        longest, None, partition=debug)


def test_the_rerun_is_bounded_by_the_partition_the_job_asked_for() -> None:
    """The widget's and the handle's suggestion read the partition from the job folder's
    request and profile (the test cluster's debug nodes have 8000M)."""
    class Folder:
        def __init__(self, meta: dict[str, Any]) -> None:
            self._meta = meta

        def meta(self) -> dict[str, Any]:
            return self._meta

        path = Path("/nonexistent")  # no node records: the request's figures

    asked = Folder({"profile": "lab", "request": {"partition": "debug", "mem_mb": 6144}})
    partition = partition_ran_in(asked)
    assert partition is not None and partition.mem_per_node_mb == 8000
    assert suggested_rerun(asked, "1", "OUT_OF_MEMORY") == {"mem": "8000M"}
    assert partition_ran_in(Folder({"profile": "no-such-profile", "request": {}})) is None
    assert suggested_rerun(Folder({"profile": "no-such-profile", "request": {"mem_mb": 6144}}),
                           "1", "OUT_OF_MEMORY") == {"mem": "12G"}


def test_a_rerun_is_checked_as_the_cell_was(lab: Any) -> None:
    """Nothing submitted for a request the cluster would refuse, or a name it has not."""
    lab.run_cell(SHIPPED)
    lab.run_cell_magic("sbatch", "--wait", "total = sum(data)")
    job = hpc_magics.job()
    job.wait(timeout=60)  # --wait fetched as the results landed: the job may still end
    with pytest.raises(InvalidRequest, match="exceeds the 8000M a node of partition 'debug'"):
        job.rerun(mem="9G")
    with pytest.raises(InvalidRequest, match="no request named memory"):
        job.rerun(memory="1G")
    assert hpc_magics.job() is job  # nothing new


@pytest.mark.timeout(240)
def test_a_failure_rerun_with_more_memory_brings_back_the_shipped_inputs(lab: Any) -> None:
    lab.run_cell(SHIPPED)
    lab.run_cell_magic("sbatch", "--mem 100M", "import os\n"
                       "assert int(os.environ['SLURM_MEM_PER_NODE']) >= 1024, 'too little'\n"
                       "total = sum(data)")
    failed = hpc_magics.job()
    lab.run_cell(CHANGED)
    assert failed.wait(timeout=120) == "FAILED"
    with pytest.raises(HpcMagicsError, match="no request named"):
        failed.rerun(memory="1G")
    again = hpc_magics.job().rerun(mem="1G")
    assert hpc_magics.job() is again and again.folder.path != failed.folder.path
    meta = again.folder.meta()
    assert meta["rerun_of"] == failed.job_id and meta["request"]["mem_mb"] == 1024
    assert "#SBATCH --mem=1G" in (again.folder.path / "job.sh").read_text()
    assert again.wait(timeout=120) == "COMPLETED"
    again.fetch(lab.user_ns, show=False)
    assert lab.user_ns["total"] == 45  # the shipped data, not the notebook's [0]


@pytest.mark.timeout(480)
def test_after_a_timeout_the_widget_and_the_handle_rerun_with_more_time(
        lab: Any, sacct_state: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    lab.run_cell(SHIPPED)
    lab.run_cell_magic("sbatch", "-t 1", "import time\ntime.sleep(75)\ntotal = sum(data)")
    timed_out = hpc_magics.job()
    lab.run_cell(CHANGED)
    with pytest.raises(HpcMagicsError, match=r"is (PENDING|RUNNING|SUBMITTED): wait for its end"):
        timed_out.rerun(time="3")
    [widget] = [w for w in shown if isinstance(w, JobWidget)]
    assert sacct_state(timed_out.job_id, until={"TIMEOUT"}, timeout=300) == "TIMEOUT"
    # the widgets' own monitor brings the end in, and with it the button
    deadline = time.monotonic() + 60
    while widget.rerun_changes != {"time": "2m"}:
        assert time.monotonic() < deadline, widget.story.value
        time.sleep(0.5)
    assert widget.rerun_button.description == "Rerun with 2m"
    assert widget.rerun_button.layout.display != "none"
    widget.rerun_button.click()
    clicked = widget.rerun_handle
    assert clicked is not None and clicked.job_id in widget.message.value, widget.message.value
    # the new job's widget, under the old one
    assert clicked.widget is not None and clicked.widget in widget.children
    assert widget.rerun_button.layout.display == "none"  # once
    by_hand = hpc_magics.job(timed_out.job_id).rerun(time="3")
    for handle, limit in ((clicked, "00:02:00"), (by_hand, "00:03:00")):
        assert handle.folder.meta()["rerun_of"] == timed_out.job_id
        assert f"#SBATCH --time={limit}" in (handle.folder.path / "job.sh").read_text()
    for handle in (clicked, by_hand):
        assert handle.wait(timeout=240) == "COMPLETED"
        lab.user_ns.pop("total", None)
        handle.fetch(lab.user_ns, show=False)
        assert lab.user_ns["total"] == 45

