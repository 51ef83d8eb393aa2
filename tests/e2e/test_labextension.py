"""The labextension in a real JupyterLab in Chromium: outside Slurm, and inside Slurm jobs
on the test cluster (countdown, save all and stop, walltime warning, jobs panel)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from hpc_magics.scheduler import commands

from .conftest import (
    Lab,
    SlurmLab,
    doc_screenshot,
    end_job,
    notebook_sources,
    processes_mentioning,
    screenshot_path,
    submit_lab_job,
    write_notebook,
)

pytestmark = pytest.mark.browser

STATUS = ".jp-HpcMagics-status"
STATUS_IN_JOB = re.compile(r"^job (\d+) · (\S+) left · (\d+\.\d+) node-h$")
APP_READY_TIMEOUT_MS = 60_000


def open_lab(page: Any, lab: Lab, path: str = "lab") -> None:
    page.goto(lab.lab_url(path))
    page.wait_for_selector(STATUS, timeout=APP_READY_TIMEOUT_MS)


def status_text(page: Any) -> str:
    return str(page.locator(STATUS).inner_text()).strip()


def wait_for_status(page: Any, pattern: re.Pattern[str], timeout_s: float = 30.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = status_text(page)
        match = pattern.match(text)
        if match:
            return match
        time.sleep(0.2)
    pytest.fail(f"the status item said {text!r}, expected {pattern.pattern}", pytrace=False)


# ------------------------------------------------------------------------- outside Slurm

def test_outside_slurm_the_status_item_says_so_quietly(local_lab: Lab, page: Any,
                                                       tmp_path: Path) -> None:
    open_lab(page, local_lab)
    wait_for_status(page, re.compile(r"^no Slurm job$"))
    assert page.locator(STATUS).get_attribute("data-kind") == "quiet"

    page.locator(STATUS).click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for()
    assert "does not run inside a Slurm job" in dialog.inner_text()
    # Nothing to stop outside a job: the dialog offers no stop button.
    assert dialog.get_by_role("button", name="Save all and stop my server").count() == 0
    page.screenshot(path=str(screenshot_path(tmp_path, "outside-slurm")))
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="detached")


# ------------------------------------------------------------------------- inside Slurm

@pytest.fixture
def lab_job_to_stop(slurm_cluster: object, tmp_path: Path) -> Iterator[SlurmLab]:
    # 20 minutes: no walltime warning yet, the status bar shows its ordinary look
    running = submit_lab_job(tmp_path, time_limit="20", name="hpc-e2e-stop")
    yield running
    end_job(running.job_id)


def test_save_all_and_stop_ends_the_job_and_keeps_the_edit(
        lab_job_to_stop: SlurmLab, page: Any, sacct_state: Any, tmp_path: Path) -> None:
    lab = lab_job_to_stop.lab
    notebook = write_notebook(lab.root_dir / "analysis.ipynb", "x = 1")
    marker = f"edited_before_stop_{lab.token[:8]} = 2"

    open_lab(page, lab, "lab/tree/analysis.ipynb")
    match = wait_for_status(page, STATUS_IN_JOB)
    assert match.group(1) == lab_job_to_stop.job_id
    # The countdown runs in the browser, every second.
    first = status_text(page)
    time.sleep(2.2)
    assert status_text(page) != first, "the countdown did not move in 2 s"

    # The kernel is up (a process of the job that must be gone after the stop).
    page.get_by_text("(ipykernel) | Idle").wait_for(timeout=60_000)
    doc_screenshot(page.locator("#jp-main-statusbar"), "status-bar", tmp_path,
                   hidden=(lab.token,))
    # the server (by its root, not its token, which is on no command line) and its kernels
    left_behind = [f"--ServerApp.root_dir={lab.root_dir}", str(lab_job_to_stop.runtime_dir)]
    assert any(processes_mentioning(text) for text in left_behind[1:]), "no kernel started"

    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type(marker)
    page.locator(".jp-mod-dirty").first.wait_for(timeout=10_000)
    assert marker not in notebook_sources(notebook), "the edit must not be saved yet"
    page.screenshot(path=str(screenshot_path(tmp_path, "in-job-edited")))

    page.locator(STATUS).click()
    details = page.locator(".jp-Dialog")
    details.wait_for()
    assert f"Your server's Slurm job {lab_job_to_stop.job_id}" in details.inner_text()
    page.screenshot(path=str(screenshot_path(tmp_path, "stop-dialog")))
    details.get_by_role("button", name="Save all and stop my server").click()

    confirm = page.locator(".jp-Dialog", has_text="Save all and stop my server?")
    confirm.wait_for()
    confirm.get_by_role("button", name="Save all and stop").click()

    stopped = page.locator("#jp-HpcMagics-stopped")
    stopped.wait_for(timeout=30_000)
    assert "You can close this tab" in stopped.inner_text()
    page.screenshot(path=str(screenshot_path(tmp_path, "stopped")))

    state = sacct_state(lab_job_to_stop.job_id, until={"CANCELLED", "COMPLETED"}, timeout=30)
    assert state in {"CANCELLED", "COMPLETED"}
    assert marker in notebook_sources(notebook)
    deadline = time.monotonic() + 15

    def leftovers() -> list[int]:
        return sorted({pid for text in left_behind for pid in processes_mentioning(text)})

    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert leftovers() == [], "a jupyter server or kernel process of the job is left"


@pytest.fixture(scope="module")
def lab_job_near_walltime(slurm_cluster: object,
                          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    """A lab whose job has 15 minutes of walltime: the 15-minute warning is due at once."""
    running = submit_lab_job(tmp_path_factory.mktemp("near-walltime"), time_limit="15",
                             name="hpc-e2e-walltime")
    yield running
    end_job(running.job_id)


def test_walltime_warning_appears_near_the_limit(lab_job_near_walltime: SlurmLab, page: Any,
                                                 tmp_path: Path) -> None:
    lab = lab_job_near_walltime.lab
    open_lab(page, lab)
    wait_for_status(page, STATUS_IN_JOB)
    toast = page.locator(".Toastify__toast", has_text="reaches its walltime")
    toast.wait_for(timeout=15_000)
    page.wait_for_timeout(1000)  # let the toast finish sliding in
    text = toast.inner_text()
    assert f"Slurm job {lab_job_near_walltime.job_id} reaches its walltime in 15 minutes" in text
    assert page.locator(STATUS).get_attribute("data-kind") == "warn"
    page.screenshot(path=str(screenshot_path(tmp_path, "walltime-warning")))
    # Once per threshold: a reload does not announce the 15-minute mark again.
    page.reload()
    wait_for_status(page, STATUS_IN_JOB)
    time.sleep(3)
    assert page.locator(".Toastify__toast", has_text="reaches its walltime").count() == 0


@pytest.fixture
def lab_job_last_minutes(slurm_cluster: object, tmp_path: Path) -> Iterator[SlurmLab]:
    running = submit_lab_job(tmp_path, time_limit="5", name="hpc-e2e-last-minutes")
    yield running
    end_job(running.job_id)


def test_both_thresholds_passed_announces_only_the_urgent_one(
        lab_job_last_minutes: SlurmLab, page: Any, tmp_path: Path) -> None:
    open_lab(page, lab_job_last_minutes.lab)
    wait_for_status(page, STATUS_IN_JOB)
    toast = page.locator(".Toastify__toast", has_text="reaches its walltime")
    toast.wait_for(timeout=15_000)
    assert "reaches its walltime in 5 minutes" in toast.inner_text()
    assert page.locator(STATUS).get_attribute("data-kind") == "urgent"
    page.wait_for_timeout(2000)
    assert toast.count() == 1, "the 15-minute warning must not follow the 5-minute one"
    page.screenshot(path=str(screenshot_path(tmp_path, "walltime-urgent")))


def test_closing_the_tab_warns_while_the_job_runs(lab_job_near_walltime: SlurmLab,
                                                  page: Any) -> None:
    open_lab(page, lab_job_near_walltime.lab)
    wait_for_status(page, STATUS_IN_JOB)
    page.locator(STATUS).click()  # a user gesture: browsers ask only after one
    page.keyboard.press("Escape")
    with page.expect_event("dialog", timeout=10_000) as asked:
        page.close(run_before_unload=True)
    dialog = asked.value
    assert dialog.type == "beforeunload"
    dialog.accept()


@pytest.fixture
def batch_job(slurm_cluster: object) -> Iterator[str]:
    submitted = commands.run(
        ["sbatch", "--parsable", "-J", "hpc-e2e-victim", "-t", "5", "-c", "1", "--mem=100",
         "-o", "/dev/null", "--wrap", "sleep 300"], timeout=30)
    assert submitted.ok, f"sbatch failed: {submitted.first_error_line()}"
    job_id = submitted.stdout.strip().split(";")[0]
    yield job_id
    end_job(job_id)


def test_jobs_panel_lists_a_job_and_cancels_it(lab_job_near_walltime: SlurmLab, batch_job: str,
                                               page: Any, sacct_state: Any,
                                               tmp_path: Path) -> None:
    open_lab(page, lab_job_near_walltime.lab)
    wait_for_status(page, STATUS_IN_JOB)
    # The right sidebar tab, as a user would open it.
    page.locator(".jp-SideBar .lm-TabBar-tab[title='My Slurm jobs']").click()
    panel = page.locator("#hpc-magics-jobs")
    panel.wait_for()

    row = panel.locator(f"li[data-job-id='{batch_job}']")
    deadline = time.monotonic() + 40
    while row.count() == 0 and time.monotonic() < deadline:
        panel.get_by_role("button", name="Refresh").click()
        time.sleep(2)
    assert row.count() == 1, f"job {batch_job} did not show up in the jobs panel"
    server_row = panel.locator(f"li[data-job-id='{lab_job_near_walltime.job_id}']")
    assert server_row.get_by_role("button", name="Stop server").count() == 1
    page.screenshot(path=str(screenshot_path(tmp_path, "jobs-panel")))

    row.get_by_role("button", name="Cancel").click()
    confirm = page.locator(".jp-Dialog", has_text=f"Cancel job {batch_job}?")
    confirm.wait_for()
    confirm.get_by_role("button", name="Cancel job").click()
    assert sacct_state(batch_job, until={"CANCELLED"}, timeout=30) == "CANCELLED"


# ------------------------------------------------------------------------- idle stop

def test_idle_warning_keep_working_then_idle_stop(start_local_lab: Any, page: Any,
                                                  tmp_path: Path) -> None:
    """An open but untouched tab must not keep the server alive: warning, keep working,
    then the idle stop (JupyterLab's own polling and workspace saves do not count)."""
    # Idle stop after 40 s, warned 30 s before: the warning is due ~10 s after the last activity.
    lab = start_local_lab("--HpcMagicsServer.idle_stop_minutes=0.6667",
                          "--HpcMagicsServer.idle_warning_minutes=0.5",
                          "--HpcMagicsServer.idle_check_interval_s=1")
    open_lab(page, lab)
    warning = page.locator(".Toastify__toast", has_text="No activity for a while")
    first_deadline = json.loads(lab.api("GET", "hpc-magics/server")[1])["idle_stop_at"]
    try:
        warning.wait_for(timeout=40_000)
    except PlaywrightTimeout:
        later_deadline = json.loads(lab.api("GET", "hpc-magics/server")[1])["idle_stop_at"]
        pytest.fail(f"no idle warning in 40 s: the server moved idle_stop_at by "
                    f"{later_deadline - first_deadline:.0f} s while nobody touched the tab "
                    "(does a passive request, e.g. JupyterLab's workspace autosave "
                    "PUT /lab/api/workspaces, count as activity?)", pytrace=False)
    page.wait_for_timeout(800)  # let the toast finish sliding in
    page.screenshot(path=str(screenshot_path(tmp_path, "idle-warning")))
    before = json.loads(lab.api("GET", "hpc-magics/server")[1])["idle_stop_at"]

    warning.get_by_role("button", name="Keep working").click()
    warning.wait_for(state="detached", timeout=10_000)
    after = json.loads(lab.api("GET", "hpc-magics/server")[1])["idle_stop_at"]
    assert after > before + 5, "Keep working did not push the idle stop back"

    # Left alone, the tab warns again and the server stops itself.
    warning.wait_for(timeout=40_000)
    deadline = time.monotonic() + 60
    while lab.api("GET", "api/status", timeout=2.0)[0] != 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert lab.api("GET", "api/status", timeout=2.0)[0] == 0, "the idle server did not stop"
    wait_for_status(page, re.compile(r"^server not answering$"), timeout_s=30)
