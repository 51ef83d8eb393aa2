"""The workshop notebooks in notebooks/, run top to bottom by a real kernel (nbclient) against
the test cluster, as a student would run them: in a folder of their own, jobs in its hpc_jobs/.
Each test checks what the notebook's outputs say, not only that it ran."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def cell_text(cell: Any) -> str:
    """What a cell showed: its streams and the plain-text form of its displays and results."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif output.get("output_type") == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@dataclass
class Executed:
    """A notebook after a real kernel ran it, and the folder it ran in."""

    notebook: Any
    folder: Path

    @property
    def code_cells(self) -> list[Any]:
        return [cell for cell in self.notebook.cells if cell.cell_type == "code"]

    @property
    def everything(self) -> str:
        return "\n".join(cell_text(cell) for cell in self.code_cells)

    def output_of(self, starts_with: str) -> str:
        """The output of the first code cell whose source starts with `starts_with`."""
        for cell in self.code_cells:
            if cell.source.lstrip().startswith(starts_with):
                return cell_text(cell)
        raise AssertionError(f"no code cell starts with {starts_with!r}")

    def images(self) -> int:
        return sum("image/png" in output.get("data", {})
                   for cell in self.code_cells for output in cell.get("outputs", []))

    def widgets(self) -> int:
        return sum("application/vnd.jupyter.widget-view+json" in output.get("data", {})
                   for cell in self.code_cells for output in cell.get("outputs", []))


def execute(name: str, folder: Path, timeout: int = 240) -> Executed:
    """Copy notebooks/NAME into `folder` (with a space in its name, as users' folders have)
    and run it there top to bottom; a cell that raises fails the test with its traceback."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / name
    shutil.copy(NOTEBOOKS / name, copy)
    notebook = nbformat.read(copy, as_version=4)
    # a student's kernel draws figures inline: an MPLBACKEND left in this test process (code
    # run in-process earlier in the suite sets Agg for jobs) must not reach it
    kernel_env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=kernel_env)
    nbformat.write(notebook, copy)  # kept for reading a failure
    return Executed(notebook, folder)


@pytest.fixture
def student_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "my course"
    folder.mkdir()
    return folder
