"""A `%%sbatch` cell in JupyterLab, as a user meets it: its output appears in the cell while
the job runs; the tab closed (its kernel left running, or shut down) before the job ends,
the reopened notebook shows the job's outputs in that cell; a kernel restarted while the
job runs follows it again by itself, in the cell that loads the extension.

The job waits at a gate file the test makes once the browser has done its part, so every
step is ordered by what the test saw, not by time; the end is the server's word in the job
folder (its ``notebook-outputs.json``), not a sleep.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.server.notebook_outputs import NOTE_FILE

from .conftest import Lab, LocalLabFactory
from .frontends import JUPYTERLAB, NotebookPage, write_cells

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]

# the server looks at its kernels' jobs every 2 s (by default every 10 s)
FAST = ("--HpcMagicsServer.events_interval_s=2", "--HpcMagicsServer.jobs_poll_interval_s=2")
KERNEL_READY = "import os\nprint('kernel ready', os.getpid())"  # a restart changes the pid
SETUP = ("%load_ext hpc_magics\nimport hpc_magics\n"
         "%hpc_resources --profile lab --backend slurm -t 5")
WHERE = "h = hpc_magics.job()\nprint('JOB', h.job_id, 'IN', h.folder.path)"
WHERE_LINE = re.compile(r"JOB (\d+) IN (\S+)")
NOTEBOOK = "tabclosed.ipynb"
JOB_TIMEOUT_S = 180
# The cell's outputs in the order the node made them (the figure is an <img>).
MADE = ["working 0", "working 2", "rich from the node", "<img>", "after the gate"]


def job_cell(gate: Path) -> str:
    """Prints, a rich display, a figure; then waits at ``gate``; prints and ends on a value."""
    return ("%%sbatch --name e2e-tabclosed\n"
            "import os, time\n"
            "import matplotlib.pyplot as plt\n"
            "from IPython.display import HTML, display\n"
            "for i in range(3):\n"
            "    print(f'working {i}', flush=True)\n"
            "display(HTML('<b>rich from the node</b>'))\n"
            "plt.plot([1, 3, 2])\n"
            "plt.show()\n"
            f"while not os.path.exists({str(gate)!r}):\n"
            "    time.sleep(0.2)\n"
            "print('after the gate', flush=True)\n"
            "answer = f'the answer is {6 * 7}'\n"
            "answer")


# In document order: each output's text and an "<img>" for each picture.
SHOWN_IN_ORDER = """area => {
  const seen = [];
  const walk = document.createTreeWalker(area, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode;
    if (node.nodeType === Node.ELEMENT_NODE && node.tagName === 'IMG') seen.push('<img>');
    else if (node.nodeType === Node.TEXT_NODE && node.textContent.trim())
      seen.push(node.textContent.trim());
  }
  return seen;
}"""


def assert_in_order(area: Any, markers: list[str]) -> None:
    """``area`` shows each of ``markers``, in that order."""
    shown = "\n".join(area.evaluate(SHOWN_IN_ORDER))
    places = [shown.find(marker) for marker in markers]
    assert -1 not in places, f"{markers[places.index(-1)]!r} not shown; the cell shows {shown}"
    assert places == sorted(places), f"not in the order {markers}: {shown}"


def live_view(notebook: NotebookPage, index: int) -> Any:
    """The job's output as the cell shows it while the job runs (under the job's widget)."""
    return notebook.output(index).locator(".widget-output").last


def open_and_submit(page: Any, lab: Lab, gate: Path) -> tuple[NotebookPage, str, Path]:
    """The notebook open, its job cell run; its live output seen while the job waits at
    ``gate``: the page, the job id, the job folder."""
    write_cells(lab.root_dir / NOTEBOOK, KERNEL_READY, SETUP, job_cell(gate), WHERE, "")
    notebook = NotebookPage(page, lab, JUPYTERLAB, NOTEBOOK).open()
    notebook.run(1, 2, 3)
    found = WHERE_LINE.search(notebook.wait_for_output(3, WHERE_LINE, 90).inner_text())
    assert found is not None
    # live: the lines, the display and the figure, while the job still waits at its gate
    notebook.wait_for_output(2, "rich from the node", JOB_TIMEOUT_S)
    notebook.output(2).locator("img").first.wait_for(timeout=60_000)
    assert_in_order(live_view(notebook, 2), MADE[:4])
    assert notebook.output(2).inner_text().count("working 0") == 1, "shown twice"
    assert not JobFolder(Path(found.group(2))).has_results()
    return notebook, found.group(1), Path(found.group(2))


def save(notebook: NotebookPage) -> None:
    """Ctrl+S until the tab says the notebook is saved (a key sent to a busy page is lost)."""
    page = notebook.page

    def saved() -> bool:
        notebook.cell(0).locator(".cm-content").click()
        page.keyboard.press("Control+s")
        try:
            page.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=5_000)
        except Exception:
            return False
        return True

    notebook.wait_until(saved, 60, "the notebook was not saved")


def menu(page: Any, name: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=name).click()
    label = page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$"))
    page.locator(".lm-Menu-item").filter(has=label).click()


def close_tab(notebook: NotebookPage) -> None:
    tab = notebook.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=notebook.notebook)
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    asked = notebook.page.locator(".jp-Dialog")
    notebook.wait_until(lambda: not tab.count() or asked.count(), 30, "the tab stayed")
    assert not asked.count(), f"closing the saved notebook asked: {asked.inner_text()}"


def kernels(lab: Lab) -> dict[str, int]:
    """The server's kernels and how many clients (tabs) each has."""
    status, body = lab.api("GET", "api/kernels")
    assert status == 200, body
    return {kernel["id"]: int(kernel.get("connections") or 0) for kernel in json.loads(body)}


def wait_for_the_server(notebook: NotebookPage, folder: Path) -> dict[str, Any]:
    """The server's word on the job's outputs, once the job ended."""
    note = folder / NOTE_FILE
    notebook.wait_until(note.exists, JOB_TIMEOUT_S,
                        f"the server wrote nothing about the job's outputs ({note})")
    return dict(json.loads(note.read_text()))


def the_server_wrote_the_outputs(notebook: NotebookPage, folder: Path, job_id: str,
                                 sacct_state: Any) -> None:
    """The job ended COMPLETED and the server wrote its outputs into the notebook."""
    note = wait_for_the_server(notebook, folder)
    assert note["written"] is True, note
    assert sacct_state(job_id, until={"COMPLETED"}, timeout=60) == "COMPLETED"


@pytest.mark.parametrize("kernel", ["left-running", "shut-down"])
def test_the_jobs_outputs_are_in_the_reopened_notebook_after_the_tab_closed(
        kernel: str, start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        sacct_state: Any, jobs_to_cancel: list[str], tmp_path: Path) -> None:
    lab = start_local_lab(*FAST)
    gate = tmp_path / "gate"
    try:
        notebook, job_id, folder = open_and_submit(page, lab, gate)
        jobs_to_cancel.append(job_id)
        save(notebook)
        [kernel_id] = kernels(lab)
        if kernel == "shut-down":
            menu(page, "Kernel", "Shut Down Kernel")
            notebook.wait_until(lambda: kernel_id not in kernels(lab), 60,
                                "the kernel was not shut down")
        close_tab(notebook)
        if kernel == "left-running":
            notebook.wait_until(lambda: kernels(lab).get(kernel_id) == 0, 60,
                                "the closed tab is still connected to its kernel")
    finally:
        gate.touch()
    the_server_wrote_the_outputs(notebook, folder, job_id, sacct_state)
    assert nbformat.read(lab.root_dir / NOTEBOOK, as_version=4).cells[2].metadata[
        "hpc_magics"]["job_id"] == job_id

    page.goto(JUPYTERLAB.notebook_url(lab, NOTEBOOK))
    first_line = f"[hpc_magics] job {job_id} ended COMPLETED"
    cell = notebook.wait_for_output(2, first_line, 60)
    assert_in_order(cell, [first_line, *MADE, "'the answer is 42'"])
    assert cell.locator(".jp-RenderedHTMLCommon b", has_text="rich from the node").count() == 1
    assert cell.locator("img").count() == 1


def test_after_a_kernel_restart_load_ext_follows_the_running_job_again(
        start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        jobs_to_cancel: list[str], tmp_path: Path) -> None:
    lab = start_local_lab(*FAST)
    gate = tmp_path / "gate"
    try:
        notebook, job_id, folder = open_and_submit(page, lab, gate)
        jobs_to_cancel.append(job_id)
        menu(page, "Kernel", "Restart Kernel…")
        dialog = page.locator(".jp-Dialog")
        dialog.locator(".jp-mod-accept").click()
        dialog.wait_for(state="detached", timeout=10_000)
        # the first cell run again prints the new kernel's pid
        notebook.wait_for_a_new_answer(90, "the restarted kernel never answered")
        notebook.run(1)  # %load_ext alone: the notebook's running job is taken up
        # the output made before the restart, while the job still waits at its gate
        live = notebook.wait_for_output(1, "rich from the node", 90)
        live.locator("img").first.wait_for(timeout=60_000)
        assert f"job {job_id} (e2e-tabclosed), sent from this notebook" in live.inner_text()
        assert_in_order(live_view(notebook, 1), MADE[:4])
        assert not JobFolder(folder).has_results()
    finally:
        gate.touch()
    notebook.wait_for_output(1, "after the gate", JOB_TIMEOUT_S)
    notebook.wait_for_output(1, "COMPLETED", JOB_TIMEOUT_S)
    assert_in_order(live_view(notebook, 1), MADE)
