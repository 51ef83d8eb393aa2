"""The two front ends the browser tests drive on the same server and kernels: JupyterLab 4
and Notebook 7 (`jupyter notebook`). Both render notebooks with the same cell DOM, so one
page object runs cells and reads outputs in either."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .conftest import Lab

APP_READY_TIMEOUT_MS = 60_000
KERNEL_READY = "print('kernel ready')"  # the first cell of every notebook written here
PRINT_JOB = "print('JOB', hpc_magics.job().job_id)"  # a cell that says the last job's id
JOB_LINE = re.compile(r"JOB (\d+)")


@dataclass(frozen=True)
class Frontend:
    name: str  # the test id
    app: str  # `python -m APP` starts its server
    notebook_route: str  # the URL path of a notebook; {} is its name

    def notebook_url(self, lab: Lab, notebook: str) -> str:
        return lab.lab_url(self.notebook_route.format(notebook))


JUPYTERLAB = Frontend("lab", "jupyterlab", "lab/tree/{}")
NOTEBOOK7 = Frontend("notebook7", "notebook", "notebooks/{}")
FRONTENDS = (JUPYTERLAB, NOTEBOOK7)


def write_cells(path: Path, *sources: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, str(path))
    return path


def choose_the_kernel_if_asked(page: Any) -> None:
    """Under load JupyterLab and Notebook 7 sometimes ask which kernel to start (their
    session request was slow): take the notebook's own, as a user would."""
    asked = page.locator(".jp-Dialog", has_text="Select Kernel")
    if asked.count() and asked.is_visible():
        asked.get_by_role("button", name="Select").click()
        asked.wait_for(state="detached", timeout=10_000)


class NotebookPage:
    """A notebook written with ``KERNEL_READY`` first, open in ``frontend``."""

    def __init__(self, page: Any, lab: Lab, frontend: Frontend, notebook: str) -> None:
        self.page = page
        self.lab = lab
        self.frontend = frontend
        self.notebook = notebook

    def open(self) -> NotebookPage:
        # The notebook's kernel is started (or found) before the page asks for one, as for a
        # notebook reopened while its kernel runs. Left to the page, JupyterLab under load
        # could also ask which kernel to start; choosing then, after the first kernel had
        # answered cell 0, swapped the kernel under the cells run next, and they never ran.
        status, body = self.lab.api("POST", "api/sessions", body={
            "path": self.notebook, "name": self.notebook, "type": "notebook",
            "kernel": {"name": "python3"}}, timeout=60.0)
        assert status in (200, 201), (status, body)
        self.page.goto(self.frontend.notebook_url(self.lab, self.notebook))
        first = self.cell(0).locator(".cm-content")
        first.wait_for(timeout=APP_READY_TIMEOUT_MS)
        ready = self.output(0).filter(has_text="kernel ready")
        # Until the kernel is connected, running a cell does nothing (in both front ends,
        # whose kernel indicators differ): run the first cell until it answers.
        for _ in range(15):
            choose_the_kernel_if_asked(self.page)
            try:
                self.run(0, timeout_ms=5_000)
                ready.wait_for(timeout=4_000)
                return self
            except Exception:
                continue
        pytest.fail(f"the kernel never answered in {self.frontend.name}", pytrace=False)

    def wait_for_a_new_answer(self, timeout_s: float, what: str) -> None:
        """Run cell 0 until its output changes (it prints a new value each time its kernel
        is new, or each run): the kernel behind the page (restarted, reopened) answers."""
        before = self.output(0).inner_text()

        def answered() -> bool:
            self.run(0)
            try:
                self.output(0).filter(has_not_text=before).filter(
                    has_text="kernel ready").wait_for(timeout=5_000)
            except Exception:
                return False
            return True

        self.wait_until(answered, timeout_s, what)

    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Any:
        # the cell's own output area, not that of an Output widget inside it (live output)
        return self.cell(index).locator(".jp-Cell-outputArea")

    def run(self, *indices: int, timeout_ms: float = 30_000) -> None:
        for index in indices:
            self.cell(index).locator(".cm-content").click(timeout=timeout_ms)
            self.page.keyboard.press("Control+Enter")

    def wait_for_output(self, index: int, text: Any, timeout_s: float) -> Any:
        """The output area of cell ``index`` once it shows ``text`` (a str or a pattern)."""
        shown = self.output(index).filter(has_text=text)
        try:
            shown.wait_for(timeout=timeout_s * 1000)
        except Exception:
            said = self.output(index).all_inner_texts()
            pytest.fail(f"cell {index} did not show {text!r} in {timeout_s:.0f} s "
                        f"({self.frontend.name}); it shows {said}", pytrace=False)
        return shown

    def printed_job_id(self, index: int) -> str:
        """The id a ``PRINT_JOB`` cell printed."""
        match = JOB_LINE.search(self.wait_for_output(index, JOB_LINE, timeout_s=90).inner_text())
        assert match is not None
        return match.group(1)

    def wait_until(self, condition: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                pytest.fail(f"{what} ({self.frontend.name}) in {timeout_s:.0f} s",
                            pytrace=False)
            time.sleep(0.3)
