"""The kernel's widgets in the browser, in JupyterLab 4 and Notebook 7 alike, with jobs on the
test cluster: the `%%sbatch` job widget (running with its progress bar and log lines, then
the end, Fetch, the efficiency report), a sweep's results table, and `%hpc_server` in a
Notebook 7 that runs as a Slurm job (time left, node-hours, Stop listing its jobs).

These tests also take the README's pictures (`job-widget`, `efficiency`, `sweep-table`):
see `doc_screenshot` and scripts/refresh-screenshots.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import (
    LocalLabFactory,
    SlurmLab,
    doc_screenshot,
    end_job,
    screenshot_path,
    submit_lab_job,
)
from .frontends import (
    FRONTENDS,
    JUPYTERLAB,
    KERNEL_READY,
    NOTEBOOK7,
    PRINT_JOB,
    NotebookPage,
    write_cells,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = ("%load_ext hpc_magics\nimport hpc_magics\n"
         "%hpc_resources --profile lab --backend slurm -t 5")
# The elements under one that clip their text (an ellipsis instead of the whole label).
CUT_SHORT = ("e => [e, ...e.querySelectorAll('*')]"
             ".filter(n => n.clientWidth > 0 && n.scrollWidth > n.clientWidth + 1)"
             ".map(n => n.className)")
TRAINING = ("%%sbatch --name e2e-widget --gpus-per-node v100:1\n"
            "import time\n"
            "for epoch in range(1, 6):\n"
            "    loss = round(1 / epoch, 3)\n"
            "    print(f'epoch {epoch}: loss {loss}', flush=True)\n"
            "    busy_until = time.time() + 3\n"
            "    while time.time() < busy_until:  # a CPU at work, as training keeps it\n"
            "        sum(range(10_000))")


def stand_in_nvidia_smi(folder: Path) -> Path:
    """A folder with a stand-in ``nvidia-smi``, put first on the server's PATH (its kernels
    and their jobs inherit it), so the job script samples "GPU" use and the efficiency
    report has its plot. A fake because the machine has no GPU: the test cluster's V100s
    are device nodes only. It prints what the real tool prints for ``--query-gpu ... -l N``
    (one CSV line per interval: 40 % busy, 2 GB of 16 GB used) until it is killed."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/bash\n"
        "every=1\n"
        'while [ $# -gt 0 ]; do [ "$1" = -l ] && every=$2; shift; done\n'
        "while true; do\n"
        '  echo "$(date "+%Y/%m/%d %H:%M:%S").000, 0, 40, 2048, 16384"\n'
        '  sleep "$every"\n'
        "done\n")
    script.chmod(0o755)
    return folder


# ------------------------------------------------------------------ the job widget


@pytest.mark.parametrize("frontend", FRONTENDS, ids=lambda f: f.name)
def test_job_widget_runs_ends_fetches_and_reports_efficiency(
        frontend: Any, start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        jobs_to_cancel: list[str], tmp_path: Path) -> None:
    tools = stand_in_nvidia_smi(tmp_path / "gpu-tools")
    lab = start_local_lab(app=frontend.app,
                          env_changes={"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})
    write_cells(lab.root_dir / "train.ipynb", KERNEL_READY, SETUP, TRAINING, PRINT_JOB,
                "print('fetched loss', loss)", "%hpc_efficiency")
    notebook = NotebookPage(page, lab, frontend, "train.ipynb").open()

    def picture(element: Any, name: str) -> None:  # the README shows JupyterLab
        doc_screenshot(element, name if frontend is JUPYTERLAB else f"{frontend.name}-{name}",
                       tmp_path, hidden=(lab.token,), for_readme=frontend is JUPYTERLAB)

    notebook.run(1, 2, 3)
    job_id = notebook.printed_job_id(3)
    jobs_to_cancel.append(job_id)

    # Running: the state, elapsed against the limit as a bar, the log's last lines.
    widget = notebook.output(2)
    notebook.wait_for_output(2, "RUNNING", timeout_s=120)
    notebook.wait_for_output(2, "epoch 3: loss 0.333", timeout_s=60)
    assert widget.locator(".widget-hprogress, .widget-progress").first.is_visible()
    assert re.search(r"running on c\d", widget.inner_text()), widget.inner_text()
    assert widget.get_by_role("button", name="Cancel").is_visible()
    # live telemetry from the node's samples: memory against the request, the GPU's use
    widget.get_by_text("40% busy").wait_for(timeout=30_000)
    assert widget.locator("svg.hpc-magics-sparkline").count() == 2
    gpu_plot = widget.locator("svg.hpc-magics-sparkline polyline").nth(1)
    notebook.wait_until(lambda: " " in str(gpu_plot.get_attribute("points")), 60,
                        "the GPU plot stayed at one sample")  # a line, for the picture
    picture(widget, "job-widget")  # the widget and, under it, the live output

    # The end, told by the widget itself (no cell run): then Fetch brings `loss` back.
    notebook.wait_for_output(2, "COMPLETED", timeout_s=120)
    assert not widget.get_by_role("button", name="Cancel").is_visible()
    widget.get_by_role("button", name="Fetch").click()
    notebook.wait_for_output(2, re.compile(r"now in the notebook: .*\bloss\b"), timeout_s=30)
    notebook.run(4)
    notebook.wait_for_output(4, "fetched loss 0.2", timeout_s=30)
    if frontend is NOTEBOOK7:
        return  # the efficiency report is the same output in both: its wait once is enough
    # After the end the widget reports the efficiency (accounting lags the end a little).
    notebook.wait_for_output(2, "CPU efficiency", timeout_s=90)

    notebook.run(5)
    report = notebook.wait_for_output(5, "GPU utilisation 40% on average", timeout_s=60)
    assert "CPU efficiency" in report.inner_text()
    report.locator("img").first.wait_for(timeout=10_000)  # the GPU plot
    picture(report, "efficiency")

    # The widget's second line: `log · folder`, which the labextension opens in JupyterLab.
    widget.locator("a[data-hpc-magics-open='folder']").first.click()
    crumbs = page.locator(".jp-FileBrowser .jp-BreadCrumbs")
    deadline = time.monotonic() + 10
    while "e2e-widget-" not in crumbs.inner_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "e2e-widget-" in crumbs.inner_text()
    page.locator(".jp-DirListing-item", has_text="job.sh").wait_for(timeout=10_000)
    widget.locator("a[data-hpc-magics-open='log']").first.click()
    page.locator(".jp-FileEditor", has_text="epoch 5: loss 0.2").first.wait_for(timeout=10_000)


# ------------------------------------------------------------------ a sweep's table


def test_sweep_results_table(start_local_lab: LocalLabFactory, slurm_cluster: object,
                             page: Any, jobs_to_cancel: list[str], tmp_path: Path) -> None:
    lab = start_local_lab()
    sweep = ("%%sbatch --name e2e-sweep --sweep lr=0.1,0.01 --sweep batch=16,32 --wait\n"
             "import time\ntime.sleep(2)\nsteps = 100\nloss = round(lr * 100 / batch, 4)")
    write_cells(lab.root_dir / "sweep.ipynb", KERNEL_READY, SETUP, sweep, PRINT_JOB,
                "hpc_magics.job().table()")
    notebook = NotebookPage(page, lab, JUPYTERLAB, "sweep.ipynb").open()
    notebook.run(1, 2, 3)
    jobs_to_cancel.append(notebook.printed_job_id(3))
    notebook.run(4)
    table = notebook.wait_for_output(4, "COMPLETED", timeout_s=150)
    rows = table.locator("table tbody tr")
    assert rows.count() == 4, table.inner_text()
    for row, (lr, batch) in zip(rows.all(), [(0.1, 16), (0.1, 32), (0.01, 16), (0.01, 32)],
                                strict=True):
        cells = row.inner_text()
        assert "COMPLETED" in cells, cells
        assert str(round(lr * 100 / batch, 4)) in cells, (lr, batch, cells)
    doc_screenshot(table.locator("table").first, "sweep-table", tmp_path, hidden=(lab.token,))


# ------------------------------------------------------------------ Notebook 7 in a job


@pytest.fixture
def notebook7_job(slurm_cluster: object, tmp_path: Path) -> Iterator[SlurmLab]:
    """A disposable Notebook 7 server running as a Slurm job: the test stops it."""
    running = submit_lab_job(tmp_path, time_limit="10", name="hpc-e2e-nb7", app="notebook",
                             extra_args=("--HpcMagicsServer.events_interval_s=2",))
    yield running
    end_job(running.job_id)


def test_notebook7_server_widget_stops_its_job_and_cancels_a_ticked_one(
        notebook7_job: SlurmLab, page: Any, sacct_state: Any, jobs_to_cancel: list[str],
        tmp_path: Path) -> None:
    lab = notebook7_job.lab
    server_job = notebook7_job.job_id
    write_cells(lab.root_dir / "server.ipynb", KERNEL_READY, SETUP,
                "%%sbatch --name e2e-nb7-child\nimport time\ntime.sleep(600)", PRINT_JOB,
                "%hpc_server")
    notebook = NotebookPage(page, lab, NOTEBOOK7, "server.ipynb").open()
    notebook.run(1, 2, 3)
    child = notebook.printed_job_id(3)
    jobs_to_cancel.append(child)

    notebook.run(4)
    widget = notebook.wait_for_output(
        4, re.compile(rf"job {server_job} · \S+ left · \d+\.\d node-h"), timeout_s=30)
    assert "Node-hours" in widget.inner_text() and "Ends" in widget.inner_text()
    stop = widget.get_by_role("button", name="Stop my server")
    offered = widget.locator(".widget-checkbox", has_text=f"cancel job {child}")

    def offers_the_job() -> bool:
        # the server learns of the kernel's job on its next look at the queue
        stop.click()
        widget.get_by_role("button", name="Yes, stop it").wait_for()
        if offered.count() == 1:
            return True
        widget.get_by_role("button", name="Keep it running").click()
        page.wait_for_timeout(2000)
        return False

    notebook.wait_until(offers_the_job, 30, f"the Stop confirmation did not list job {child}")
    assert "e2e-nb7-child" in offered.inner_text()
    assert offered.evaluate(CUT_SHORT) == [], "the job's label is cut short"
    assert not offered.locator("input").is_checked(), "jobs are left running unless ticked"
    offered.locator("input").check()
    page.screenshot(path=str(screenshot_path(tmp_path, "notebook7-stop")))
    widget.get_by_role("button", name="Yes, stop it").click()

    assert sacct_state(child, until={"CANCELLED"}, timeout=30) == "CANCELLED"
    assert sacct_state(server_job, until={"CANCELLED", "COMPLETED"}, timeout=30) in \
        {"CANCELLED", "COMPLETED"}
    assert lab.api("GET", "api/status", timeout=2.0)[0] == 0, "the server still answers"
    # sacct says it ended; squeue may still list it COMPLETING (CG) while its node cleans
    # up: it must then leave the queue, not stay
    assert queue_lets_go_of(server_job), f"job {server_job} stays in the queue"


def queue_lets_go_of(job_id: str, looks: int = 30) -> bool:
    """Whether squeue stops listing ``job_id`` within ``looks`` looks, a second apart."""
    for _ in range(looks):
        listed = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
        if not listed.stdout.strip():
            return True
        assert listed.stdout.split() == ["COMPLETING"], listed.stdout
        time.sleep(1.0)
    return False
