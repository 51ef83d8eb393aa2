"""The job widget's live telemetry on the real test cluster: the node samples the job's
memory (and its GPUs, with the stand-in nvidia-smi: this machine has none), the widget
monitor's round reads the samples from the job folder and shows them while the job runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

# the monitor tests' lab, submission and monitor round
from test_monitor import StandInNvidiaSmi, lab, submit, tick_until

from hpc_magics.core.node_records import parse_memory_samples
from hpc_magics.widgets import telemetry
from hpc_magics.widgets.job import JobWidget

pytestmark = pytest.mark.timeout(300)
__all__ = ["lab"]  # a fixture, used by name

# a cell that grows by 100 MB every 4 s (written bytes: resident, not just reserved)
GROWING = ("import time\nheld = []\nfor step in range(5):\n"
           "    held.append(b'x' * (100 * 1024 * 1024))\n    time.sleep(4)\n")
NOW = re.compile(r"memory <svg.*?</svg> now ([\d.]+)([MG]) · peak [\d.]+[MG] of 1\.0G asked")


def widget_html(widget: Any) -> str:
    """What the widget's HTML parts say now, as the front end gets it."""
    if isinstance(widget, ipywidgets.HTML):
        return str(widget.value)
    return "".join(widget_html(child) for child in getattr(widget, "children", ()))


def running(widget: JobWidget) -> bool:
    return widget.handle.status.state == "RUNNING"


def test_a_running_jobs_memory_grows_in_the_widget_against_its_request(lab: Any) -> None:
    handle = submit(lab, "--mem 1G", GROWING)
    widget = JobWidget(handle)
    seen: list[float] = []  # MB now, each time the widget showed a new sample

    def look() -> None:
        found = NOW.search(widget_html(widget))
        if found and running(widget):
            megabytes = float(found[1]) * (1024 if found[2] == "G" else 1)
            if not seen or megabytes != seen[-1]:
                seen.append(megabytes)

    grown = tick_until([widget], lambda: len(seen) >= 3 and seen[-1] > seen[0] + 150, 120, look)
    assert grown, (seen, widget_html(widget))
    shown = widget_html(widget)
    assert "stroke-dasharray" in shown  # the request, as a dashed level
    assert "GPU" not in shown  # no GPUs asked: no GPU part
    # the samples travelled through the job folder, one file per node
    [samples] = handle.folder.path.glob(f"mem-{handle.job_id}.*.csv")
    assert parse_memory_samples(samples.read_text())[-1].peak_mb >= seen[-1] - 1
    assert tick_until([widget], lambda: widget.handle.status.final, 120)
    assert "<svg" not in widget_html(widget)  # live only: after the end, the report's turn


def test_an_idle_gpu_gets_a_nudge(lab: Any, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in nvidia-smi says 0 % busy (no GPU here; see StandInNvidiaSmi); three
    idle samples are enough for the test (a minute's worth by default)."""
    StandInNvidiaSmi(tmp_path / "gpu-tools", monkeypatch, utilisation=0)
    monkeypatch.setattr(telemetry, "IDLE_SAMPLES", 3)
    handle = submit(lab, "--gpus-per-node v100:1", "import time\ntime.sleep(90)")
    widget = JobWidget(handle)
    assert tick_until([widget], lambda: running(widget) and "idle for" in widget_html(widget),
                      150), widget_html(widget)
    shown = widget_html(widget)
    assert re.search(r"GPU 0 <svg.*?</svg> 0% busy", shown), shown
    assert re.search(r"GPU 0 idle for \d+s: is the code on the GPU\?", shown), shown
