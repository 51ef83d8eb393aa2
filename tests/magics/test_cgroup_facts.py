"""What a confining cluster does to a cell, as the notebook sees it: a cell over its --mem
ends OUT_OF_MEMORY and says so in one line; a cell shorter than accounting's first sample
still gets its memory peak (the node records it); every node of a multi-node job samples
its GPUs; an OUT_OF_MEMORY cell reruns with the memory the advice names (by its handle).

Run on whatever cluster the tests see: the host's (Slurm 22.05, one hostname, no cgroups:
the memory tests skip, saying so) or, through tests/sites/test_release_node_facts.py, on
each --release cluster's login host (hosts apart, cgroups enforcing).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

# beside this file (pytest puts its folder on sys.path)
from test_monitor import StandInNvidiaSmi, lab, submit

from hpc_magics.core.errors import JobFailed
from hpc_magics.scheduler import commands

__all__ = ["lab"]  # the fixture, shared with test_monitor.py

pytestmark = pytest.mark.timeout(300)


def why_memory_is_not_confined() -> str:
    """"" when the cluster confines jobs' memory with cgroups, else why not."""
    config = commands.run(["scontrol", "show", "config"], timeout=30)
    assert config.ok, config.stderr
    if "task/cgroup" not in config.stdout:
        release = os.environ.get("HPC_MAGICS_RELEASE", "the host's cluster")
        return (f"{release} does not confine memory (TaskPlugin without task/cgroup): "
                "the --release clusters do; tests/sites/test_release_node_facts.py runs "
                "this there")
    return ""


def node_records(handle: Any) -> list[dict[str, Any]]:
    return [json.loads(p.read_text())
            for p in sorted(handle.folder.path.glob(f"node-{handle.job_id}.*.json"))]


def test_a_cell_over_its_memory_says_so_in_one_line(lab: Any) -> None:
    if why := why_memory_is_not_confined():
        pytest.skip(why)
    handle = submit(lab, "--mem 200M", "held = bytearray(600 * 1024 * 1024)\nheld[::4096] = "
                                       "b'x' * len(held[::4096])")
    handle.wait(timeout=120)
    with pytest.raises(JobFailed) as failed:
        handle.fetch(show=False)
    message = str(failed.value)
    assert "\n" not in message, message
    assert ("the job ran out of memory: it was limited to 200M (--mem=200M); ask for more "
            "with --mem") in message, message


# over a 200M limit; 1G (the rerun the advice names) holds it
GREEDY = ("held = bytearray(size * 1024 * 1024)\nheld[::4096] = b'x' * len(held[::4096])\n"
          "held_mb = len(held) // (1024 * 1024)\ndel held")


def test_an_out_of_memory_cell_reruns_with_more_and_its_shipped_inputs(lab: Any) -> None:
    if why := why_memory_is_not_confined():
        pytest.skip(why)
    lab.run_cell("size = 600")
    handle = submit(lab, "--mem 200M", GREEDY)
    handle.wait(timeout=120)
    assert handle.end_state() == "OUT_OF_MEMORY"
    assert handle.suggested_rerun() == {"mem": "1G"}  # the advice's number
    lab.run_cell("size = 1")  # the rerun ships what the job had, not this
    again = handle.rerun(**handle.suggested_rerun())
    assert again.folder.meta()["rerun_of"] == handle.job_id
    assert again.wait(timeout=120) == "COMPLETED"
    again.fetch(lab.user_ns, show=False)
    assert lab.user_ns["held_mb"] == 600


def test_a_short_cells_memory_peak_comes_from_the_node(lab: Any,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    handle = submit(lab, "--mem 1G", "import time\nheld = bytearray(300 * 1024 * 1024)\n"
                                     "held[::4096] = b'x' * len(held[::4096])\ntime.sleep(3)\n"
                                     "del held")
    handle.wait(timeout=120)
    handle.fetch(show=False)
    [record] = node_records(handle)
    assert record["rusage_peak_mb"] >= 300, record
    confined = not why_memory_is_not_confined()
    if confined:
        assert record["cgroup_peak_mb"] >= 300 and record["limit_mb"] == 1024, record
    capsys.readouterr()
    lab.run_line_magic("hpc_efficiency", handle.job_id)
    shown = capsys.readouterr().out
    assert "memory peak not sampled" not in shown, shown
    peak = shown.split("memory peak ", 1)[1].split("\n", 1)[0]
    assert peak.split(" ", 1)[0].endswith("M") and 300 <= float(peak.split("M", 1)[0]) < 1024, \
        shown
    if "; from " in peak:  # sacct had no MaxRSS, or a smaller one: the node's own word
        source = "the job's cgroup on the node" if confined else "getrusage"
        assert source in peak, peak


def test_every_node_of_a_job_samples_its_gpus(lab: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in nvidia-smi (no GPU exists here, the clusters' GPUs are device files
    only; see StandInNvidiaSmi) that also notes which host ran it."""
    ran_on = tmp_path / "nvidia-smi-ran-on"
    StandInNvidiaSmi(tmp_path / "gpu-tools", monkeypatch, ran_on)
    handle = submit(lab, "--nodes 2 --ntasks-per-node 1 --gpus-per-node v100:1",
                    "import time\ntime.sleep(7)")
    handle.wait(timeout=120)
    files = sorted(p.name for p in handle.folder.path.glob(f"gpu-{handle.job_id}.*.csv"))
    assert files == [f"gpu-{handle.job_id}.c1.csv", f"gpu-{handle.job_id}.c2.csv"], files
    assert all((handle.folder.path / f).read_text().strip() for f in files), files
    hosts = sorted(set(ran_on.read_text().split()))
    if hosts == [socket.gethostname()]:
        pytest.skip("both nodes of the host's cluster share its hostname: the --release "
                    "clusters' nodes are hosts apart (tests/sites/test_release_node_facts.py)")
    assert hosts == ["c1", "c2"], hosts
