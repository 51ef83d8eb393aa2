"""Issue 27's "Done when", walked as a new user would in JupyterLab on the test cluster, in one
notebook: a training cell sent with ``%%sbatch`` shows its progress bar (one updating line),
its printed losses and a live loss plot while it trains; the tab closed and reopened after
the job ended shows all of it, also in the saved ``.ipynb``; a failing cell is debugged with
``%debug`` (a node-side local's value); a job that ran out of a resource reruns with more in
one click on its widget and ends COMPLETED.

The resource is time (TIMEOUT), not memory: the host's test cluster confines nothing
(``TaskPlugin=task/none``, no cgroups: scripts/slurm-cluster), so a cell over its --mem
never ends OUT_OF_MEMORY here. The OUT_OF_MEMORY rerun is
tests/magics/test_cgroup_facts.py on the release clusters, where cgroups enforce --mem.

Every step waits on what the page or the job folder says, never on time: the training job
waits at a gate file after its last epoch, so "while it trains" is checked before it can end.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from hpc_magics.jobfolder.folder import JobFolder

from .conftest import LocalLabFactory
from .frontends import JUPYTERLAB, NotebookPage, write_cells
from .test_outputs_with_tab_closed import (
    FAST,
    JOB_TIMEOUT_S,
    WHERE,
    WHERE_LINE,
    close_tab,
    kernels,
    live_view,
    save,
    the_server_wrote_the_outputs,
)
from .test_rerun_click import RERUN_OFFERED, RERUN_SAID

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

NOTEBOOK = "walk.ipynb"
# a new value each run: a reopened page knows its kernel answers when the output changes
KERNEL_READY = "import time\nprint('kernel ready', time.monotonic_ns())"
SETUP = ("%load_ext hpc_magics\nimport hpc_magics\n"
         "%hpc_resources --profile lab --backend slurm -t 5")
EPOCHS = 5
LOSSES = [f"epoch {epoch} loss" for epoch in range(EPOCHS)]


def training_cell(gate: Path) -> str:
    """A small training loop as a user writes one: a tqdm bar over its steps, a loss printed
    each epoch, a loss plot redrawn in place (``display_id``); then it waits at ``gate``."""
    return ("%%sbatch --name walk-train\n"
            "import os, time\n"
            "import matplotlib.pyplot as plt\n"
            "from IPython.display import display\n"
            "from tqdm import tqdm\n"
            "losses = []\n"
            "fig, ax = plt.subplots(figsize=(4, 3))\n"
            "plot = None\n"
            f"bar = tqdm(total={EPOCHS * 10}, desc='training')\n"
            f"for epoch in range({EPOCHS}):\n"
            "    for step in range(10):\n"
            "        time.sleep(0.25)\n"
            "        bar.update(1)\n"
            "    losses.append(1.0 / (epoch + 1))\n"
            "    print(f'epoch {epoch} loss {losses[-1]:.3f}', flush=True)\n"
            "    ax.clear()\n"
            "    ax.plot(losses, marker='o')\n"
            "    ax.set_title('loss')\n"
            "    if plot is None:\n"
            "        plot = display(fig, display_id=True)\n"
            "    else:\n"
            "        plot.update(fig)\n"
            "bar.close()\n"
            "plt.close(fig)\n"
            f"while not os.path.exists({str(gate)!r}):\n"
            "    time.sleep(0.2)\n"
            "f'final loss {losses[-1]:.2f}'")


FAILING = ("%%sbatch --wait --name walk-fail\n"
           "def train_step(batch):\n"
           "    learning_rate = 1234.5 * 2\n"
           "    return batch * learning_rate / 0\n"
           "train_step(3)")
TOO_SHORT = ("%%sbatch --name walk-rerun -t 0:00:05\n"  # Slurm rounds it up to a minute
             "import time\n"
             "print('training longer than asked', flush=True)\n"
             "time.sleep(100)\n"
             "done = 'rerun done'\n"
             "print(done)")
CELLS = (KERNEL_READY, SETUP, training_cell, WHERE, FAILING, "%debug", TOO_SHORT)
TRAIN, WHERE_AT, FAIL_AT, DEBUG_AT, RERUN_AT = 2, 3, 4, 5, 6


def shows_training(area: Any) -> None:
    """``area`` shows the whole training as a local cell does: each loss once; the bar's 50
    updates (``\\r``, on stderr) as one updating line between two losses (printed on stdout,
    which starts a new output, so a local cell also shows one bar line per epoch and the
    closing one), never two bar lines in a row; one loss plot (redrawn in place)."""
    text = area.inner_text()
    for loss in LOSSES:
        assert text.count(loss) == 1, f"{loss!r} not shown once: {text}"
    lines = [line for line in text.splitlines() if line.strip()]
    bars = [n for n, line in enumerate(lines) if line.startswith("training:")]
    assert 1 <= len(bars) <= EPOCHS + 1, f"the bar is not updated in place: {lines}"
    assert all(later - earlier > 1 for earlier, later in itertools.pairwise(bars)), lines
    assert "100%" in lines[bars[-1]], lines[bars[-1]]
    assert area.locator("img").count() == 1, "the plot was not redrawn in place"


def reopen(notebook: NotebookPage) -> None:
    """Open the notebook again and wait until its (still running) kernel answers."""
    page = notebook.page
    page.goto(JUPYTERLAB.notebook_url(notebook.lab, NOTEBOOK))
    notebook.cell(0).locator(".cm-content").wait_for(timeout=60_000)
    notebook.wait_for_a_new_answer(120, "the reopened notebook's kernel never answered")


def debug(notebook: NotebookPage, command: str) -> Any:
    """Type ``command`` at the ``%debug`` prompt, as a user does; the prompt's locator.
    Enter makes JupyterLab replace the prompt by its echo at once: a prompt still there
    had its keys lost (the output area redrawn under them, seen under load), so again."""
    prompt = notebook.output(DEBUG_AT).locator("input.jp-Stdin-input")
    typed = notebook.output(DEBUG_AT).locator("input.jp-Stdin-input[data-hm-typed]")
    for _ in range(5):
        prompt.last.wait_for(timeout=60_000)
        prompt.last.evaluate("input => { input.dataset.hmTyped = '1'; }")
        typed.last.fill(command)
        typed.last.press("Enter")
        try:
            typed.first.wait_for(state="detached", timeout=10_000)
            return prompt
        except Exception:
            continue
    pytest.fail(f"%debug never took {command!r}", pytrace=False)


def test_the_done_when_walk(start_local_lab: LocalLabFactory, slurm_cluster: object,
                            page: Any, sacct_state: Any, jobs_to_cancel: list[str],
                            tmp_path: Path) -> None:
    lab = start_local_lab(*FAST)
    gate = tmp_path / "gate"
    write_cells(lab.root_dir / NOTEBOOK,
                *(cell(gate) if callable(cell) else cell for cell in CELLS))
    notebook = NotebookPage(page, lab, JUPYTERLAB, NOTEBOOK).open()

    # 1. the training cell sent: bar, losses and plot while it trains
    try:
        notebook.run(1, TRAIN, WHERE_AT)
        found = WHERE_LINE.search(notebook.wait_for_output(WHERE_AT, WHERE_LINE, 90).inner_text())
        assert found is not None
        job_id, folder = found.group(1), Path(found.group(2))
        jobs_to_cancel.append(job_id)
        notebook.wait_for_output(TRAIN, LOSSES[0], JOB_TIMEOUT_S)
        live = live_view(notebook, TRAIN)
        live.locator("img").first.wait_for(timeout=60_000)  # the plot, after the first epoch
        notebook.wait_for_output(TRAIN, LOSSES[-1], JOB_TIMEOUT_S)
        live.filter(has_text=re.compile(r"training: 100%")).wait_for(timeout=60_000)
        shows_training(live)
        assert not JobFolder(folder).has_results(), "the job ended before the checks"

        # 2. the tab closed while the job waits; the job ends with no tab open
        save(notebook)
        [kernel_id] = kernels(lab)
        close_tab(notebook)
        notebook.wait_until(lambda: kernels(lab).get(kernel_id) == 0, 60,
                            "the closed tab is still connected to its kernel")
    finally:
        gate.touch()
    the_server_wrote_the_outputs(notebook, folder, job_id, sacct_state)

    # ... in the saved .ipynb, in the cell that sent the job
    saved = nbformat.read(lab.root_dir / NOTEBOOK, as_version=4).cells[TRAIN]
    assert saved.metadata["hpc_magics"]["job_id"] == job_id
    texts = "".join(str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
                    for output in saved.outputs)
    assert all(loss in texts for loss in LOSSES), texts
    assert "'final loss 0.20'" in texts, texts  # the cell's value
    assert sum("image/png" in output.get("data", {}) for output in saved.outputs) == 1

    # ... and on reopening, in the page
    reopen(notebook)
    cell = notebook.wait_for_output(TRAIN, f"[hpc_magics] job {job_id} ended COMPLETED", 60)
    shows_training(cell)

    # 3. a failing cell, then %debug: the node's frame and a local's value there
    notebook.run(FAIL_AT)
    notebook.wait_for_output(FAIL_AT, "ZeroDivisionError", JOB_TIMEOUT_S)
    notebook.run(DEBUG_AT)
    notebook.wait_for_output(DEBUG_AT, "return batch * learning_rate / 0", 60)
    debug(notebook, "p learning_rate")
    notebook.wait_for_output(DEBUG_AT, "2469.0", 60)  # computed on the node, not in the source
    debug(notebook, "q").first.wait_for(state="detached", timeout=60_000)  # the debugger left

    # 4. a job over its time limit; the widget's rerun, one click; it ends COMPLETED
    notebook.run(RERUN_AT)
    notebook.wait_for_output(RERUN_AT, "training longer than asked", 120)
    notebook.wait_for_output(RERUN_AT, "TIMEOUT", 240)
    notebook.wait_for_output(RERUN_AT, RERUN_OFFERED, 90)
    notebook.output(RERUN_AT).get_by_role("button", name=RERUN_OFFERED).first.click()
    said = RERUN_SAID.search(notebook.wait_for_output(RERUN_AT, RERUN_SAID, 60).inner_text())
    assert said is not None
    again = said.group(1)
    jobs_to_cancel.append(again)
    rerun = notebook.output(RERUN_AT).locator(".widget-vbox .widget-vbox").filter(
        has_text=f"job {again}")
    rerun.filter(has_text="COMPLETED").wait_for(timeout=240_000)
    assert sacct_state(again, until={"COMPLETED"}, timeout=60) == "COMPLETED"
