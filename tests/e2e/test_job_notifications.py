"""Jobs ending and a server stopping, in a real JupyterLab (and Notebook 7) in Chromium, with
jobs submitted from the page's own notebook on the test cluster.

- the end of a job shows a notification naming it and its state, whose "Open folder" shows
  the job folder in the file browser; the jobs panel shows the end at the same moment;
- "Save all and stop my server" lists the still running jobs started from this server and
  cancels one only when it is ticked (else it outlives the server);
- Notebook 7: `%hpc_server` shows its widget, job ends are notified there too, and "Save
  all and stop" works from its File menu.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import Lab, LocalLabFactory, doc_screenshot, run_from_the_palette, screenshot_path
from .frontends import (
    JUPYTERLAB,
    KERNEL_READY,
    NOTEBOOK7,
    PRINT_JOB,
    Frontend,
    NotebookPage,
    choose_the_kernel_if_asked,
    write_cells,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

APP_READY_TIMEOUT_MS = 60_000
KERNEL_IDLE = "(ipykernel) | Idle"
FAST_EVENTS = ("--HpcMagicsServer.events_interval_s=2", "--HpcMagicsServer.jobs_poll_interval_s=2")
SETUP = ("%load_ext hpc_magics\nimport hpc_magics\n"
         "%hpc_resources --profile lab --backend slurm -t 5")
JOB_LINE = re.compile(r"JOB (\d+)")


def submitting_notebook(lab: Lab, name: str, seconds: int) -> str:
    """A notebook that submits one job named ``name`` and prints ``JOB <id>``."""
    write_cells(lab.root_dir / f"{name}.ipynb", SETUP,
                f"%%sbatch --name {name}\nimport time\ntime.sleep({seconds})\nx = 1",
                "print('JOB', hpc_magics.job().job_id)")
    return f"{name}.ipynb"


def run_all_cells_in_lab(page: Any, lab: Lab, notebook: str) -> str:
    """Open ``notebook`` in JupyterLab, run its cells; return the id it printed."""
    page.goto(lab.lab_url(f"lab/tree/{notebook}"))
    page.get_by_text(KERNEL_IDLE).wait_for(timeout=APP_READY_TIMEOUT_MS)
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
    for _ in range(3):
        page.keyboard.press("Shift+Enter")
    outputs = page.locator("[data-mime-type='application/vnd.jupyter.stdout']")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # outputs stream in and re-render: read them whole
        for text in outputs.all_text_contents():
            match = JOB_LINE.search(text)
            if match:
                return match.group(1)
        time.sleep(0.3)
    pytest.fail(f"no job id printed in 90 s: {outputs.all_text_contents()}", pytrace=False)


def queue_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip() if answer.ok else ""


# ------------------------------------------------------------------ the end of a job


def test_end_of_job_notification_opens_its_folder_and_updates_the_panel(
        start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        jobs_to_cancel: list[str], tmp_path: Path) -> None:
    lab = start_local_lab(*FAST_EVENTS)
    notebook = submitting_notebook(lab, "e2e-notify", seconds=8)
    page.goto(lab.lab_url(f"lab/tree/{notebook}"))
    page.locator(".jp-SideBar .lm-TabBar-tab[title='My Slurm jobs']").click()
    panel = page.locator("#hpc-magics-jobs")
    panel.wait_for()
    job_id = run_all_cells_in_lab(page, lab, notebook)
    jobs_to_cancel.append(job_id)
    page.locator(".jp-SideBar .lm-TabBar-tab[title='My Slurm jobs']").click()
    row = panel.locator(f"li[data-job-id='{job_id}']")
    deadline = time.monotonic() + 30
    while row.count() == 0 and time.monotonic() < deadline:
        panel.get_by_role("button", name="Refresh").click()
        time.sleep(1)
    assert row.count() == 1, f"job {job_id} is not in the jobs panel"
    assert row.get_attribute("data-state") in {"SUBMITTED", "PENDING", "RUNNING", "COMPLETING"}

    toast = page.locator(".Toastify__toast", has_text=f"Slurm job {job_id}")
    toast.wait_for(timeout=120_000)
    # the panel's own timer runs every 30 s: a prompt change comes from the end event
    deadline = time.monotonic() + 3
    while row.get_attribute("data-state") != "COMPLETED" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert row.get_attribute("data-state") == "COMPLETED"
    page.wait_for_timeout(800)  # let the toast finish sliding in
    assert f"Slurm job {job_id} “e2e-notify” ended: COMPLETED" in toast.inner_text()
    page.screenshot(path=str(screenshot_path(tmp_path, "job-ended")))

    toast.get_by_role("button", name="Open folder").click()
    crumbs = page.locator(".jp-FileBrowser .jp-BreadCrumbs")
    deadline = time.monotonic() + 10
    while "e2e-notify-" not in crumbs.inner_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "e2e-notify-" in crumbs.inner_text()
    page.locator(".jp-DirListing-item", has_text="job.sh").wait_for(timeout=10_000)
    page.screenshot(path=str(screenshot_path(tmp_path, "job-folder")))


# ------------------------------------------------------------------ stopping the server


@pytest.mark.parametrize(("frontend", "cancel_it"), [
    (JUPYTERLAB, False), (JUPYTERLAB, True), (NOTEBOOK7, True)],
    ids=["leave-running", "cancel", "notebook7-cancel"])
def test_stop_dialog_lists_a_running_job_and_cancels_it_only_when_ticked(
        frontend: Frontend, cancel_it: bool, start_local_lab: LocalLabFactory,
        slurm_cluster: object, page: Any, sacct_state: Any, jobs_to_cancel: list[str],
        tmp_path: Path) -> None:
    lab = start_local_lab(app=frontend.app)
    write_cells(lab.root_dir / "outlive.ipynb", KERNEL_READY, SETUP,
                "%%sbatch --name e2e-outlive\nimport time\ntime.sleep(600)",
                PRINT_JOB)
    notebook = NotebookPage(page, lab, frontend, "outlive.ipynb").open()
    notebook.run(1, 2, 3)
    job_id = notebook.printed_job_id(3)
    jobs_to_cancel.append(job_id)

    if frontend is NOTEBOOK7:  # no status bar there: the File menu has it all
        page.locator(".lm-MenuBar-item", has_text="File").click()
        page.locator(".lm-Menu-item", has_text="My Slurm Jobs").click()
        panel = page.locator("#hpc-magics-jobs")  # in Notebook 7's right side panel
        panel.locator(f"li[data-job-id='{job_id}']").wait_for(timeout=30_000)
        assert panel.is_visible()
        page.locator(".lm-MenuBar-item", has_text="File").click()
        page.locator(".lm-Menu-item", has_text="Save All and Stop My Server").click()
    else:
        run_from_the_palette(page, "Save All and Stop My Server")
    confirm = page.locator(".jp-Dialog", has_text="Save all and stop my server?")
    confirm.wait_for()
    box = confirm.locator(f"input[data-job-id='{job_id}']")
    assert box.count() == 1, f"job {job_id} is not offered: {confirm.inner_text()}"
    assert "e2e-outlive" in confirm.inner_text()
    assert not box.is_checked(), "jobs are left running unless ticked"
    if not cancel_it:
        doc_screenshot(confirm.locator(".jp-Dialog-content"), "stop-dialog", tmp_path,
                       hidden=(lab.token,))
    if cancel_it:
        box.check()
    page.screenshot(path=str(screenshot_path(tmp_path, f"stop-jobs-{cancel_it}")))
    confirm.get_by_role("button", name="Save all and stop").click()

    stopped = page.locator("#jp-HpcMagics-stopped")
    stopped.wait_for(timeout=30_000)
    said = stopped.inner_text()
    deadline = time.monotonic() + 30
    while lab.api("GET", "api/status", timeout=2.0)[0] != 0:
        assert time.monotonic() < deadline, "the server did not stop"
        time.sleep(0.5)
    if cancel_it:
        assert f"Cancelled: job {job_id}" in said
        assert sacct_state(job_id, until={"CANCELLED"}, timeout=30) == "CANCELLED"
    else:
        assert f"Still running, as you chose: job {job_id}" in said
        assert queue_state(job_id) in {"RUNNING", "PENDING"}, "the job must outlive the server"


# ------------------------------------------------------------------ Notebook 7


def test_notebook7_shows_the_server_widget_and_job_ends(
        start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        jobs_to_cancel: list[str], tmp_path: Path) -> None:
    lab = start_local_lab(*FAST_EVENTS, app="notebook")
    write_cells(lab.root_dir / "nb7.ipynb", "%load_ext hpc_magics\n%hpc_server")
    page.goto(lab.lab_url("notebooks/nb7.ipynb"))
    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    editor.wait_for(timeout=APP_READY_TIMEOUT_MS)
    headline = page.locator(".jp-OutputArea-output",
                            has_text="This Jupyter server is not running in a Slurm job")
    dialogs: list[str] = []
    for _ in range(12):  # until the kernel is connected, Ctrl+Enter does nothing
        choose_the_kernel_if_asked(page)
        try:
            editor.click(timeout=10_000)
            page.keyboard.press("Control+Enter")
            headline.wait_for(timeout=5_000)
            break
        except Exception:
            dialogs += page.locator(".jp-Dialog").all_inner_texts()
            continue
    assert headline.count() == 1, (
        f"the %hpc_server widget did not render in Notebook 7 (dialogs shown: {dialogs})")
    assert page.get_by_role("button", name="Stop my server").count() == 1
    page.screenshot(path=str(screenshot_path(tmp_path, "notebook7-server")))

    # No kernel involved: a job from a terminal ends, the page is told.
    submitted = commands.run(["sbatch", "--parsable", "-J", "e2e-nb7", "-t", "2", "-o",
                              "/dev/null", "--chdir=/tmp", "--wrap", "sleep 8"], timeout=30)
    assert submitted.ok, submitted.first_error_line()
    job_id = submitted.stdout.strip().split(";")[0]
    jobs_to_cancel.append(job_id)
    said = end_notice(page, lab, job_id, timeout_s=90)
    assert "ended: COMPLETED" in said or ("COMPLETED" in said and "Slurm jobs ended" in said)


def end_notice(page: Any, lab: Lab, job_id: str, timeout_s: float) -> str:
    """The text of the notification that told the end of ``job_id``: its own, or the summary
    when more than 8 of the user's jobs ended in the same look at the queue (the same user's
    other sessions share a busy test cluster; the summary is then the designed answer)."""
    own = page.locator(".Toastify__toast", has_text=f"Slurm job {job_id} ")
    summary = page.locator(".Toastify__toast", has_text="Slurm jobs ended:")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if own.count():
            return str(own.first.inner_text())
        status, body = lab.api("GET", "hpc-magics/jobs/events?since=0")
        events = json.loads(body)["events"] if status == 200 else []
        if summary.count() and any(e["job_id"] == job_id for e in events):
            return str(summary.last.inner_text())
        time.sleep(1)
    pytest.fail(f"no notification of the end of job {job_id} in {timeout_s:.0f} s",
                pytrace=False)


def test_many_jobs_ending_at_once_make_one_summary(
        start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        jobs_to_cancel: list[str], tmp_path: Path) -> None:
    """Nine pending jobs cancelled by one scancel end in the same look at the queue: one
    summary notification (with the jobs panel a click away), not nine toasts."""
    lab = start_local_lab(*FAST_EVENTS)
    page.goto(lab.lab_url())
    page.locator(".jp-HpcMagics-status").wait_for(timeout=APP_READY_TIMEOUT_MS)
    for _ in range(9):
        submitted = commands.run(["sbatch", "--parsable", "-J", "e2e-burst", "-t", "1",
                                  "--begin=now+600", "-o", "/dev/null", "--chdir=/tmp",
                                  "--wrap", "true"], timeout=30)
        assert submitted.ok, submitted.first_error_line()
        jobs_to_cancel.append(submitted.stdout.strip().split(";")[0])
    deadline = time.monotonic() + 30  # every one seen pending by the server first
    while True:
        status, body = lab.api("GET", "hpc-magics/jobs")
        listed = {job["job_id"] for job in json.loads(body)["jobs"]} if status == 200 else set()
        if set(jobs_to_cancel) <= listed:
            break
        assert time.monotonic() < deadline, "the pending jobs were not all listed"
        time.sleep(1)
    assert commands.run(["scancel", *jobs_to_cancel], timeout=30).ok
    summary = page.locator(".Toastify__toast", has_text="Slurm jobs ended:")
    summary.wait_for(timeout=60_000)
    page.wait_for_timeout(800)
    said = re.match(r"(\d+) Slurm jobs ended", summary.inner_text().strip())
    assert said is not None, summary.inner_text()
    assert int(said.group(1)) >= 9 and "CANCELLED" in summary.inner_text()
    for job_id in jobs_to_cancel:
        assert page.locator(".Toastify__toast", has_text=f"Slurm job {job_id} ").count() == 0
    page.screenshot(path=str(screenshot_path(tmp_path, "burst-summary")))
    summary.get_by_role("button", name="My Slurm jobs").click()
    panel = page.locator("#hpc-magics-jobs")
    panel.wait_for()
    for job_id in jobs_to_cancel:
        assert panel.locator(f"li[data-job-id='{job_id}']").get_attribute("data-state") == \
            "CANCELLED"
