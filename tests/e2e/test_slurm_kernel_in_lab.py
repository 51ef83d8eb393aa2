"""A Slurm kernel picked in JupyterLab's launcher, in Chromium, on the test cluster: while its
job pends the status bar (and a notification) shows Slurm's reason, then its time left and
cost so far; a cell runs on the node in that job; shutting the kernel down ends the job."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from hpc_magics.cli import main as cli_main
from hpc_magics.scheduler import commands

from .conftest import (
    Lab,
    LocalLabFactory,
    doc_screenshot,
    run_from_the_palette,
    screenshot_path,
    this_clones_jupyter_path,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

APP_READY_TIMEOUT_MS = 60_000
KERNELS = ".jp-HpcMagics-kernels"
ALLOCATION = ".jp-HpcMagics-allocation"
DISPLAY_NAME = "Slurm e2e kernel"
SPEC = "lab-e2e"
GONE_WITHIN_S = 15.0
CELL = ("import os, socket\n"
        "print('ON', os.environ['SLURM_JOB_ID'], os.environ.get('SLURMD_NODENAME'), "
        "socket.gethostname())")


def squeue(job_id: str, field: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", field], timeout=20)
    return answer.stdout.strip() if answer.ok else ""


def blocker_job() -> str:
    """A short job the kernel's job waits for (``-d afterany:``): the test cluster's way of
    making a job pend with a known reason (Dependency) on demand."""
    answer = commands.run(["sbatch", "--parsable", "-J", "e2e-kernel-blocker", "-t", "2",
                           "-o", "/dev/null", "--wrap", "sleep 120"], timeout=30)
    assert answer.ok, answer.first_error_line()
    return answer.stdout.strip().split(";")[0]


def wait_for_text(page: Any, selector: str, pattern: re.Pattern[str],
                  timeout_s: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        locator = page.locator(selector)
        text = str(locator.inner_text()).strip() if locator.count() else ""
        match = pattern.search(text)
        if match:
            return match
        time.sleep(0.3)
    pytest.fail(f"{selector} said {text!r}, expected {pattern.pattern}", pytrace=False)


def pick_in_the_launcher(page: Any, start_local_lab: LocalLabFactory, tmp_path: Path,
                         *request: str, lab_args: tuple[str, ...] = ()) -> Lab:
    """Install kernelspec SPEC with the lab profile and ``request``, start JupyterLab with it
    on JUPYTER_PATH, and pick it in the launcher (a new notebook)."""
    prefix = tmp_path / "prefix"
    assert cli_main(["kernel", "install", SPEC, "--prefix", str(prefix), "--profile", "lab",
                     "--display-name", DISPLAY_NAME, *request]) == 0
    # the kernelspec's prefix, and this clone's labextension, on the server's JUPYTER_PATH
    clone = this_clones_jupyter_path(tmp_path / "lab0" / "jupyter-path")
    paths = [str(prefix / "share" / "jupyter"), *([clone] if clone else [])]
    lab = start_local_lab(*lab_args, env_changes={"JUPYTER_PATH": os.pathsep.join(paths)})
    page.goto(lab.lab_url())
    card = page.locator(".jp-LauncherCard", has_text=DISPLAY_NAME).first
    card.wait_for(timeout=APP_READY_TIMEOUT_MS)
    card.click()
    return lab


def test_a_slurm_kernel_from_the_launcher_pends_runs_on_the_node_and_leaves_no_job(
        slurm_cluster: object, start_local_lab: LocalLabFactory, page: Any,
        tmp_path: Path) -> None:
    blocker = blocker_job()
    try:
        lab = pick_in_the_launcher(page, start_local_lab, tmp_path, "-t", "20",
                                   "-d", f"afterany:{blocker}")

        # pending: the status bar and a notification say why, from squeue
        pending = wait_for_text(page, KERNELS, re.compile(
            rf"kernel {SPEC}: job (\d+) pending \(Dependency\)"), timeout_s=60)
        job_id = pending.group(1)
        assert squeue(job_id, "%T") == "PENDING"
        assert page.locator(f"{KERNELS} [data-job-id='{job_id}']").get_attribute(
            "data-kind") == "pending"
        toast = page.locator(".Toastify__toast", has_text=f"job {job_id} pending (Dependency)")
        toast.first.wait_for(timeout=15_000)
        page.locator(".jp-StatusBar-Widget").screenshot(
            path=str(screenshot_path(tmp_path, "kernel-pending")))
        page.screenshot(path=str(screenshot_path(tmp_path, "kernel-pending-page")))
    finally:
        commands.run(["scancel", blocker], timeout=30)  # the kernel's job may start now

    # running: time left (under its 20 minutes) and cost so far, the lab profile's billing
    running = wait_for_text(page, KERNELS, re.compile(
        rf"kernel {SPEC}: job {job_id} · (\d+m\d\ds) left · (\d+\.\d+) (\S+-h)"), timeout_s=90)
    minutes, seconds = running.group(1)[:-1].split("m")
    assert 15 * 60 < int(minutes) * 60 + int(seconds) <= 20 * 60, running.group(0)
    assert page.locator(f"{KERNELS} [data-job-id='{job_id}']").get_attribute(
        "data-kind") == "ok", "more than 15 minutes left: the ordinary look"
    assert squeue(job_id, "%T") == "RUNNING"
    # the allocation item: sshare knows the account (the test cluster sets no limit)
    wait_for_text(page, ALLOCATION, re.compile(r"^allocation \S+: "), timeout_s=90)

    # the notebook's kernel is the job: a cell prints its job id and node
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for(
        timeout=APP_READY_TIMEOUT_MS)
    page.locator(".jp-StatusBar-Widget", has_text=f"{DISPLAY_NAME} | Idle").first.wait_for(
        timeout=APP_READY_TIMEOUT_MS)
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
    page.keyboard.type(CELL)
    page.keyboard.press("Shift+Enter")
    output = page.locator(".jp-OutputArea-output", has_text="ON ").first
    output.wait_for(timeout=60_000)
    _, printed_id, node, _host = str(output.inner_text()).split()
    assert printed_id == job_id and node == squeue(job_id, "%N")
    # the README's picture (scripts/refresh-screenshots): the status bar, the kernel running
    doc_screenshot(page.locator(".jp-StatusBar-Widget"), "kernel-status-bar", tmp_path,
                   hidden=(lab.token,))

    # shut the kernel down from the Kernel menu: its job leaves squeue within seconds
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.get_by_role("menuitem", name="Shut Down Kernel").click()
    try:  # JupyterLab asks first
        page.locator(".jp-Dialog").get_by_role("button", name="Shut Down").click(
            timeout=5_000)
    except PlaywrightTimeout:
        pass
    deadline = time.monotonic() + GONE_WITHIN_S
    while squeue(job_id, "%i") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue(job_id, "%i") == "", f"job {job_id} still in squeue"
    page.locator(f"{KERNELS} [data-job-id='{job_id}']").wait_for(state="detached",
                                                                 timeout=30_000)


def test_stop_my_server_lists_the_kernel_job_first_and_ends_it(
        slurm_cluster: object, start_local_lab: LocalLabFactory, page: Any,
        tmp_path: Path) -> None:
    pick_in_the_launcher(page, start_local_lab, tmp_path, "-t", "5")
    job_id = wait_for_text(page, KERNELS, re.compile(rf"kernel {SPEC}: job (\d+) · "),
                           timeout_s=90).group(1)

    run_from_the_palette(page, "Save All and Stop My Server")
    dialog = page.locator(".jp-Dialog", has_text="Save all and stop my server?")
    listed = dialog.locator(f".jp-HpcMagics-stop-kernels li[data-job-id='{job_id}']")
    listed.wait_for(timeout=30_000)
    assert f"kernel {SPEC}: job {job_id}" in listed.inner_text()
    page.screenshot(path=str(screenshot_path(tmp_path, "stop-lists-kernel-job")))
    assert squeue(job_id, "%T") == "RUNNING", "listed, not yet cancelled"
    dialog.get_by_role("button", name="Save all and stop").click()

    stopped = page.locator("#jp-HpcMagics-stopped")
    stopped.wait_for(timeout=30_000)
    assert f"Kernel jobs cancelled with it: job {job_id}." in stopped.inner_text()
    deadline = time.monotonic() + GONE_WITHIN_S
    while squeue(job_id, "%i") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue(job_id, "%i") == "", f"job {job_id} still in squeue"


def test_the_idle_warning_names_the_kernel_job_and_the_idle_stop_ends_it(
        slurm_cluster: object, start_local_lab: LocalLabFactory, page: Any,
        tmp_path: Path) -> None:
    # idle stop 60 s after the last activity (picking the kernel), warned 30 s before
    pick_in_the_launcher(page, start_local_lab, tmp_path, "-t", "5",
                         lab_args=("--HpcMagicsServer.idle_stop_minutes=1",
                                   "--HpcMagicsServer.idle_warning_minutes=0.5",
                                   "--HpcMagicsServer.idle_check_interval_s=1"))
    job_id = wait_for_text(page, KERNELS, re.compile(rf"kernel {SPEC}: job (\d+) · "),
                           timeout_s=60).group(1)
    warning = page.locator(".Toastify__toast", has_text="No activity for a while")
    warning.wait_for(timeout=60_000)
    assert f"the kernel jobs end too: kernel {SPEC} (job {job_id})" in warning.inner_text()
    page.wait_for_timeout(800)  # let the toast finish sliding in
    page.screenshot(path=str(screenshot_path(tmp_path, "idle-warning-kernel-job")))
    deadline = time.monotonic() + 60
    while squeue(job_id, "%i") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue(job_id, "%i") == "", f"the idle stop left job {job_id} in squeue"
