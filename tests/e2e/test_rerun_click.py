"""Rerun with more in one click, as a new user meets it in JupyterLab: a `%%sbatch` cell
runs out of a resource, its job widget offers "Rerun with …", the user clicks the first
such button shown, and the same cell with the same shipped state runs again with the new
limit, succeeds, and its output and result come into the notebook.

The resource is time (TIMEOUT), not memory: the host's test cluster confines nothing
(``TaskPlugin=task/none``, no cgroups: scripts/slurm-cluster), so a cell over its --mem
runs on and never ends OUT_OF_MEMORY here. The OUT_OF_MEMORY rerun with the memory the
advice names is tests/magics/test_cgroup_facts.py's
``test_an_out_of_memory_cell_reruns_with_more_and_its_shipped_inputs`` (through the handle:
``rerun(**suggested_rerun())``, what the button calls), run on each release cluster, where
cgroups enforce --mem, by tests/sites/test_release_node_facts.py.

The cell asks for 5 seconds, which Slurm rounds up to a minute, and sleeps longer than the
minute and the up to 30 s slurmctld takes to notice; twice that minute holds it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import LocalLabFactory
from .frontends import JUPYTERLAB, KERNEL_READY, NotebookPage, write_cells

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(480)]

SETUP = ("%load_ext hpc_magics\nimport hpc_magics\n"
         "%hpc_resources --profile lab --backend slurm -t 5")
SHIPPED = "data = list(range(10))"
TOO_SHORT = ("%%sbatch --name e2e-rerun -t 0:00:05\n"
             "import time\n"
             "print('summing', len(data), 'numbers', flush=True)\n"
             "time.sleep(100)\n"
             "total = sum(data)\n"
             "print('total', total)")
# after the submission: the rerun ships what the job had, not the notebook's value now
CHANGED = "data = [0]"
JOB_TIMEOUT_S = 240
RERUN_OFFERED = re.compile(r"Rerun with ")
RERUN_SAID = re.compile(r"running again as job (\d+) --time (\S+)")


def test_a_timed_out_cell_reruns_with_more_time_in_one_click(
        start_local_lab: LocalLabFactory, slurm_cluster: object, page: Any,
        sacct_state: Any, jobs_to_cancel: list[str]) -> None:
    lab = start_local_lab()
    write_cells(lab.root_dir / "rerun.ipynb", KERNEL_READY, SETUP, SHIPPED, TOO_SHORT, CHANGED,
                "print('the total is', total)")
    notebook = NotebookPage(page, lab, JUPYTERLAB, "rerun.ipynb").open()
    notebook.run(1, 2, 3)
    widget = notebook.output(3)
    notebook.wait_for_output(3, "summing 10 numbers", 120)  # it runs
    notebook.run(4)
    notebook.wait_for_output(3, "TIMEOUT", JOB_TIMEOUT_S)

    # the first "Rerun with …" the widget shows, as a user would click it
    notebook.wait_for_output(3, RERUN_OFFERED, 90)
    offered = widget.get_by_role("button", name=RERUN_OFFERED)  # its icon's glyph comes first
    offered.first.click()
    said = RERUN_SAID.search(
        notebook.wait_for_output(3, RERUN_SAID, 60).inner_text())
    assert said is not None
    again, new_time = said.groups()
    jobs_to_cancel.append(again)
    assert new_time == "2m", said.group(0)  # twice the minute Slurm gave
    offered.first.wait_for(state="hidden", timeout=10_000)  # once

    # the rerun's own widget, under the first one: it runs to the end, Fetch brings it in
    rerun = widget.locator(".widget-vbox .widget-vbox").filter(has_text=f"job {again}")
    rerun.filter(has_text="COMPLETED").wait_for(timeout=JOB_TIMEOUT_S * 1000)
    rerun.get_by_role("button", name="Fetch").click()
    # the names; its output came live into its widget, and shows there once
    notebook.wait_for_output(3, re.compile(r"now in the notebook: .*\btotal"), 30)
    assert rerun.inner_text().count("total 45") == 1, rerun.inner_text()
    notebook.run(5)
    notebook.wait_for_output(5, "the total is 45", 30)  # the shipped data, not [0]
    assert sacct_state(again, until={"COMPLETED"}, timeout=60) == "COMPLETED"
