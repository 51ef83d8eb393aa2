"""Watching jobs on the real test cluster: the widget's story, efficiency, GPU samples, all jobs.

Real jobs, real squeue/sacct, a real IPython shell. The widget is driven by the kernel's
monitor round (``Monitor.tick``), as its thread would, with a short poll interval
(``HPC_MAGICS_POLL_INTERVAL``) and a queue/accounting cache of the test's own.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.magics.widget_monitor import Monitor
from hpc_magics.scheduler import commands
from hpc_magics.scheduler import watcher as watcher_module
from hpc_magics.widgets.job import JobWidget

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def lab(shell: Any, slurm_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A shell on the lab profile, a private runtime dir and a fresh watcher polling every 1 s."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("HPC_MAGICS_POLL_INTERVAL", "1")
    monkeypatch.setattr(watcher_module, "_WATCHER", None)
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 3")
    yield shell
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    for job_id in magics.handles:  # only ours, by id
        commands.run(["scancel", job_id], timeout=30)


def submit(shell: Any, line: str, cell: str) -> Any:
    shell.run_cell_magic("sbatch", line, cell)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    return magics.handles[magics.last_job]


def tick_until(widgets: list[JobWidget], done: Callable[[], bool], timeout: float,
               every: Callable[[], None] = lambda: None) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        Monitor.tick(widgets)
        every()
        if done():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def shown(widget: Any) -> bool:
    return widget.layout.display != "none"


@pytest.mark.slow
@pytest.mark.serial  # holds both nodes: beside other tests it waits for them, and they for it
def test_pending_while_the_nodes_are_kept_busy(lab: Any, sacct_state: Any) -> None:
    """Both nodes held by a job of ours (exclusive): the cell waits for them, in plain words,
    then runs and completes once they are free. Never another user's job: ours, by id."""
    held = commands.run(["sbatch", "--parsable", "--exclusive", "-N", "2", "-t", "3",
                         "-J", "hpc-magics-test-holder", "-o", "/dev/null", "--wrap", "sleep 170"],
                        timeout=30)
    assert held.ok, held.stderr
    holder = held.stdout.strip().split(";")[0]
    try:
        assert sacct_state(holder, until={"RUNNING"}, timeout=90) == "RUNNING"
        handle = submit(lab, "", "value = 6 * 7")
        widget = JobWidget(handle)
        # Slurm says Resources or Priority here, depending on when it last looked; before its
        # first look at the job (26.05 waits for its next scheduling pass) the reason is None,
        # shown as "waiting for the scheduler to look at it"
        assert tick_until([widget], lambda: bool(re.match(
            r"pending: waiting for (free nodes|higher-priority jobs)", widget.story.value)), 120), \
            widget.story.value
        assert "PENDING" in widget.status.value and shown(widget.cancel_button)
    finally:
        commands.run(["scancel", holder], timeout=30)
    assert tick_until([widget], lambda: "COMPLETED" in widget.status.value, 120), \
        widget.status.value
    assert widget.story.value == "" and shown(widget.fetch_button)


def test_pending_story_and_a_confirmed_cancel(lab: Any, sacct_state: Any) -> None:
    handle = submit(lab, "", "#SBATCH --begin=now+600\nprint('never')")
    widget = JobWidget(handle)
    assert tick_until([widget], lambda: "--begin" in widget.story.value, 30), widget.story.value
    assert widget.story.value.startswith("pending: waiting for its requested start time")
    assert re.search(r"estimated start (\d{4}-\d\d-\d\d )?\d\d:\d\d \(in (9|10)m\)",
                     widget.story.value)  # a date when it falls on another day
    assert shown(widget.cancel_button) and not shown(widget.fetch_button)
    assert not shown(widget.progress)
    # Cancel asks first; "No" keeps the job
    widget.cancel_button.click()
    assert shown(widget.confirm) and handle.job_id in widget.confirm_text.value
    widget.confirm_no.click()
    assert not shown(widget.confirm)
    assert handle.refresh(max_age_s=0) == "PENDING"
    widget.cancel_button.click()
    widget.confirm_yes.click()  # one look after scancel, then the monitor shows the end
    assert "CANCELLED" in widget.status.value or \
        "Cancel sent" in widget.message.value, widget.status.value
    assert sacct_state(handle.job_id, until={"CANCELLED"}) == "CANCELLED"
    assert tick_until([widget], lambda: "CANCELLED" in widget.status.value, 30), \
        widget.status.value
    # why it ended, as the notebook's error says it (accounting adds who cancelled it)
    assert widget.story.value.startswith("CANCELLED: it was cancelled"), widget.story.value
    assert not shown(widget.cancel_button)
    assert shown(widget.fetch_button)  # it says why there are no results


def test_running_story_growing_log_then_completed_with_efficiency(lab: Any) -> None:
    handle = submit(lab, "", "import time\nfor i in range(30):\n"
                             "    print('step', i, flush=True)\n    time.sleep(0.5)\nx = 42")
    widget = JobWidget(handle)
    seen_steps: list[int] = []
    stories: list[str] = []

    def watch() -> None:
        steps = [int(n) for n in re.findall(r"step (\d+)", widget.log_view.value)]
        if steps and handle.status.state == "RUNNING":
            seen_steps.append(max(steps))
            stories.append(widget.story.value)
            assert shown(widget.progress) and 0.0 <= widget.progress.value < 1.0
            assert shown(widget.cancel_button)
            # Fetch once there is something to fetch (results written, the job tidying up)
            assert not shown(widget.fetch_button) or handle.folder.has_results()

    assert tick_until([widget], lambda: handle.status.final and widget.usage is not None, 120,
                      every=watch), (handle.status, widget.usage_note)
    assert len(set(seen_steps)) >= 2 and seen_steps == sorted(seen_steps)  # the tail grew
    assert any(re.match(r"running on c[12] · \d+s of 3m · 2m left", s) for s in stories), stories
    assert len(re.findall(r"step \d+", widget.log_view.value)) == 8  # the last lines only
    widget.log_button.click()  # "More": the whole log
    assert "step 0\n" in widget.log_view.value and widget.log_button.description == "Less"
    # the end: no stale running line, no bar, Fetch instead of Cancel, the figures
    assert "COMPLETED" in widget.status.value and widget.story.value == ""
    assert not shown(widget.progress) and not shown(widget.cancel_button)
    assert "CPU efficiency" in widget.efficiency.value and "of 3m" in widget.efficiency.value
    assert not shown(widget.gpu_plot) and not list(handle.folder.path.glob("gpu-*.csv"))
    widget.fetch_button.click()
    assert lab.user_ns["x"] == 42


def test_wait_leaves_no_stale_progress_line(lab: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    shown_objects: list[Any] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda *objects, **_: shown_objects.extend(objects))
    lab.run_cell_magic("sbatch", "--wait", "y = 7")
    assert lab.user_ns["y"] == 7
    [widget] = [o for o in shown_objects if isinstance(o, JobWidget)]
    # --wait fetches when the result file lands: Slurm may still be ending the job then
    # (the widget says what it said at that moment), and the monitor shows its end
    assert "PENDING" not in widget.status.value
    deadline = time.monotonic() + 20
    while "COMPLETED" not in widget.status.value:
        assert time.monotonic() < deadline, widget.status.value
        time.sleep(0.2)
    assert widget.story.value == ""
    # the widget tells the progress: no separate "RUNNING · 1s" line to go stale
    assert not [o for o in shown_objects if type(o).__name__ == "Pretty"]


BURN = """
import time
import numpy as np

def rss_mb():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024

before = rss_mb()
block = np.ones(300 * 1024 * 1024 // 8)  # 300 MB, every page touched
print('rss before', before, flush=True)
start = time.process_time()
while time.process_time() - start < 40:  # 40 s of CPU, longer than sacct's 30 s sampling
    block[::4096] += 1.0
del block  # not shipped back: the node's own peak record counts the shipping too
"""


@pytest.mark.slow
def test_failed_timeout_and_efficiency_figures(lab: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Three real jobs at once: one raises, one outlives -t 1, one uses a known amount of
    memory (300 MB) and CPU time (40 s), which %hpc_efficiency reports within 10 %."""
    failing = submit(lab, "", "raise ValueError('on purpose')")
    timing_out = submit(lab, "-t 1", "import time\ntime.sleep(300)")
    burning = submit(lab, "--mem 2G -t 5", BURN)
    widgets = [JobWidget(h) for h in (failing, timing_out, burning)]
    assert tick_until(widgets, lambda: all(w.handle.status.definite for w in widgets)
                      and widgets[2].usage is not None, 240), [w.handle.status for w in widgets]
    assert [w.handle.status.state for w in widgets] == ["FAILED", "TIMEOUT", "COMPLETED"]
    assert not any(shown(w.cancel_button) for w in widgets)
    # why, as the notebook's error says it: what the cell raised (its outcome file), the
    # limit Slurm ended the second at; a success needs no line
    assert [w.story.value for w in widgets] == [
        "FAILED: the cell raised ValueError: on purpose",
        "TIMEOUT: it reached its time limit: ask for more with -t", ""]
    assert tick_until(widgets[1:2], lambda: widgets[1].usage is not None, 60)
    assert "hit its time limit (1m)" in widgets[1].efficiency.value
    capsys.readouterr()
    lab.run_line_magic("hpc_efficiency", burning.job_id)
    out = capsys.readouterr().out
    before = float(re.search(r"rss before ([\d.]+)", burning.log(tail=200)).group(1))  # type: ignore[union-attr]
    peak = re.search(r"memory peak ([\d.]+)([MG]) of 2.0G asked", out)
    assert peak, out
    peak_mb = float(peak.group(1)) * (1024 if peak.group(2) == "G" else 1)
    # accounting samples the cell's 300 MB; the node's own record (getrusage, the job's
    # cgroup) also counts the result's shipping after the cell, and wins when larger
    sampled = re.search(r"accounting sampled ([\d.]+)M\)", out)
    if sampled:
        assert peak_mb >= float(sampled.group(1)), out
        peak_mb = float(sampled.group(1))
    assert abs(peak_mb - (before + 300)) <= 0.10 * (before + 300), (peak_mb, before, out)
    usage = burning.folder.path / "usage.json"  # kept: never asked again
    assert usage.exists()
    import json

    [figures] = json.loads(usage.read_text())
    assert abs(figures["total_cpu_s"] - 40) <= 4.0, figures
    assert re.search(r"CPU efficiency \d+% \((\d+s|\d\.\ds) of CPU time on 1 CPU\)", out), out
    assert "advice: asked 2.0G, peak" in out  # 2G asked, ~0.4G used


class StandInNvidiaSmi:
    """A stand-in ``nvidia-smi`` first on PATH (the jobs inherit it).

    This machine has no GPU: the fake V100s of the test cluster are device nodes only,
    so the stand-in prints what the real tool prints for ``--query-gpu ... -l N``: one CSV
    line per interval, utilisation 40 % (or ``utilisation``) and 2 GB used of 16 GB, until
    it is killed.
    """

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch,
                 ran_on: Path | None = None, utilisation: int = 40) -> None:
        """``ran_on``: a file each run appends its host's name to."""
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "nvidia-smi"
        script.write_text(
            "#!/bin/bash\n"
            + (f"hostname >> '{ran_on}'\n" if ran_on else "")
            + "every=1\n"
            'while [ $# -gt 0 ]; do [ "$1" = -l ] && every=$2; shift; done\n'
            "while true; do\n"
            f'  echo "$(date "+%Y/%m/%d %H:%M:%S").000, 0, {utilisation}, 2048, 16384"\n'
            '  sleep "$every"\n'
            "done\n")
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_gpu_use_is_sampled_and_plotted(lab: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """GPU sampling with a stand-in nvidia-smi (this machine has no GPU; see the class)."""
    StandInNvidiaSmi(tmp_path / "fake-gpu-tools", monkeypatch)
    handle = submit(lab, "--gpus-per-node v100:1", "import time\ntime.sleep(12)")
    widget = JobWidget(handle)
    assert tick_until([widget], lambda: widget.usage is not None, 90), handle.status
    # the node side samples, one file per node (node/usage_recorder.py)
    [sample_file] = handle.folder.path.glob(f"gpu-{handle.job_id}.*.csv")
    samples = sample_file.read_text().splitlines()
    assert len(samples) >= 2, samples  # every 5 s over 12 s
    assert "GPU utilisation 40% on average over 1 GPU" in widget.efficiency.value
    assert shown(widget.gpu_plot) and bytes(widget.gpu_plot.value).startswith(b"\x89PNG")
    images: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: images.extend(objects))
    capsys.readouterr()
    lab.run_line_magic("hpc_efficiency", handle.job_id)
    assert "memory peak 2.0G of 16.0G" in capsys.readouterr().out
    assert [type(i).__name__ for i in images] == ["Image"]
    # the sampler stopped with the job: the file no longer grows
    size = len(sample_file.read_text())
    time.sleep(6)
    assert len(sample_file.read_text()) == size


def test_gpu_use_on_a_real_gpu(lab: Any) -> None:
    """Where the test machine has a GPU (a real nvidia-smi): the real tool's samples parse.
    This machine has none, so here it skips; the stand-in test above covers the rest."""
    from hpc_magics.core.efficiency import parse_gpu_samples

    if shutil.which("nvidia-smi") is None:
        pytest.skip("no GPU on this machine (no nvidia-smi)")
    handle = submit(lab, "--gres gpu:1", "import time\ntime.sleep(12)")
    handle.wait(timeout=120)
    [sample_file] = handle.folder.path.glob(f"gpu-{handle.job_id}.*.csv")
    samples = parse_gpu_samples(sample_file.read_text())
    assert len(samples) >= 2 and all(s.memory_total_mb > 0 for s in samples), samples


def test_all_jobs_of_other_notebooks_and_tools_filtered_and_cancelled_by_id(
        lab: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        sacct_state: Any) -> None:
    other = commands.run(["sbatch", "--parsable", "-H", "-t", "2", "-J", "other-tool",
                          "-o", str(tmp_path / "other-%j.out"), "--wrap", "echo from other"],
                         timeout=30)
    assert other.ok, other.stderr
    other_id = other.stdout.strip().split(";")[0]
    magics = lab.magics_manager.registry["HpcMagicsKernel"]
    try:
        # submitted from another notebook's folder: found through the user's job index
        here = magics.jobs_dir
        magics.jobs_dir = str(tmp_path / "another notebook" / "hpc_jobs")
        mine = submit(lab, "", "#SBATCH --begin=now+600\nz = 1")
        magics.jobs_dir = here
        magics.handles.clear()
        capsys.readouterr()
        time.sleep(1.5)  # one poll interval: the shared view lists both
        lab.run_line_magic("hpc_jobs", "--all --state PD")
        table = capsys.readouterr().out
        assert re.search(rf"^\s+{other_id}\s+PENDING\s+-\s+debug .*JobHeldUser\s+other-tool$",
                         table, re.M), table
        # another notebook's job has its folder's kind: a cell
        assert re.search(rf"^\s+{mine.job_id}\s+PENDING\s+cell .*BeginTime", table, re.M), table
        lab.run_line_magic("hpc_jobs", "--all --state R")
        assert other_id not in capsys.readouterr().out
        lab.run_line_magic("hpc_jobs", "")  # this notebook's: neither
        table = capsys.readouterr().out
        assert other_id not in table and mine.job_id not in table, table
        import hpc_magics

        assert hpc_magics.job(mine.job_id).folder == mine.folder
        # another tool's job is cancelled by id, as %hpc_jobs --all lists it
        lab.run_line_magic("hpc_cancel", other_id)
        assert sacct_state(other_id, until={"CANCELLED"}) == "CANCELLED"
        lab.run_line_magic("hpc_cancel", mine.job_id)
        assert sacct_state(mine.job_id, until={"CANCELLED"}) == "CANCELLED"
    finally:
        commands.run(["scancel", other_id], timeout=30)


def _job_in_a_folder(lab: Any, name: str, *sbatch_args: str) -> str:
    """A job submitted with plain sbatch (as a sweep does), given a job folder of the
    notebook's as the product would write it; its id."""
    from hpc_magics.jobfolder.folder import JobFolder
    from hpc_magics.scheduler.cluster import cluster_name

    started = time.time()
    answer = commands.run(["sbatch", "--parsable", "-t", "2", *sbatch_args], timeout=30)
    assert answer.ok, answer.stderr
    job_id: str = answer.stdout.strip().split(";")[0]
    magics = lab.magics_manager.registry["HpcMagicsKernel"]
    JobFolder.create(magics.jobs_root, name).write_meta(
        {"name": name, "backend": "slurm", "job_id": job_id, "state": "SUBMITTED",
         "submitted_at": started, "submit_returned_at": time.time(),
         "cluster": cluster_name()})
    return job_id


def test_efficiency_per_task_of_an_array(lab: Any, tmp_path: Path, sacct_state: Any,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An array job (submitted with sbatch, as a sweep does) gets one report per task."""
    job_id = _job_in_a_folder(lab, "array", "--array=0-2", "-o", str(tmp_path / "a-%A_%a.out"),
                              "--wrap", "sleep 1")
    for task in range(3):
        sacct_state(f"{job_id}_{task}", until={"COMPLETED"}, timeout=60)
    capsys.readouterr()
    lab.run_line_magic("hpc_efficiency", job_id)
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("task ")] == [
        f"task {job_id}_{task}:" for task in range(3)], out
    assert out.count("  state COMPLETED") == 3 and out.count("  time ") == 3


def test_efficiency_right_after_the_end_looks_at_the_queue_itself(
        lab: Any, tmp_path: Path, sacct_state: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The user's shared queue view, a second old, can predate a job's end that accounting
    already shows (another process's squeue began just before it): ``%hpc_efficiency``
    looked no further and said "job is RUNNING" (seen in a clean-clone run, on an array
    whose tasks sacct listed COMPLETED). The view is put in this test's own queue cache by
    hand: a real squeue cannot be held across a job's end on demand."""
    from dataclasses import replace

    queue = watcher_module.watcher().queue
    monkeypatch.setattr(queue, "cache_dir", tmp_path)  # this test's view, no other's
    job_id = _job_in_a_folder(lab, "ended", "-o", str(tmp_path / "j.out"), "--wrap", "sleep 2")
    deadline = time.monotonic() + 60
    while True:
        running = queue.view(0)
        if any(e.state == "RUNNING" for e in running.find_all(job_id)):
            break
        assert time.monotonic() < deadline, running
        time.sleep(0.2)
    sacct_state(job_id, until={"COMPLETED"}, timeout=60)
    queue._write(replace(running, updated=time.time()))  # a view "a moment ago", from before
    capsys.readouterr()
    lab.run_line_magic("hpc_efficiency", job_id)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "state COMPLETED", out
