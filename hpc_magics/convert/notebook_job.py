"""A whole notebook as one job, run cell by cell on a real kernel on the node.

The notebook runs on a kernel (through nbclient) rather than as a converted script, so
its magics, rich outputs and figures are recorded exactly as in Jupyter.  The executed
notebook is written after every cell (atomically), so when the job hits its time limit the
outputs of the cells that finished are on disk and open in JupyterLab.

What changes before the run: cells tagged ``hpc-skip``/``remove_cell`` are left out,
package installs (``%pip install``, ``!conda install``) are commented out (install before the
job, not in it), ``tqdm.notebook`` becomes plain tqdm (a widget has nobody to draw for), and
with ``strip_display`` the display code goes as in ``hpc-magics convert``.  Figures in the
outputs are also saved as PNG files in the job folder's ``figures/``.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..jobfolder.files import write_atomically
from .cells import plain_cells
from .display import strip_cells
from .magic_rules import INSTALL_WHY, INSTALLERS
from .script import helper_code, progress_cells, skip_cells, translate_cells

NOTEBOOK_IN = "notebook.ipynb"
NOTEBOOK_OUT = "executed.ipynb"
FIGURES_DIR = "figures"


def _comment_installs(source: str) -> str:
    """``%pip install``, ``!conda install`` and the like, commented out with the reason."""
    lines = []
    for line in source.splitlines(keepends=True):
        text = line.strip()
        if text[:1] in ("%", "!") and INSTALLERS.match(text[1:]):
            indent, ending = line[: len(line) - len(line.lstrip())], line[len(line.rstrip("\n")):]
            line = f"{indent}# {text}: dropped, {INSTALL_WHY}{ending}"
        lines.append(line)
    return "".join(lines)


def prepare_notebook(notebook: Mapping[str, Any], *, strip_display: bool = False) -> dict[str, Any]:
    """The notebook the job runs: no outputs, skipped cells out, installs commented out."""
    cells = plain_cells(notebook, "cell-")
    skip_cells(cells)
    needs: set[str] = set()
    if strip_display:
        translate_cells(cells, needs)
    for cell in cells:
        if cell["cell_type"] == "code":
            cell.update(source=_comment_installs(cell["source"]), outputs=[], execution_count=None)
    progress_cells(cells)
    if strip_display:
        strip_cells(cells)
        if needs:  # what the translated magics call, defined before the first cell
            cells.insert(0, {"cell_type": "code", "id": "hpc-magics-helpers", "outputs": [],
                             "execution_count": None, "metadata": {"tags": ["hpc-helpers"]},
                             "source": helper_code(needs).strip() + "\n"})
    return {"nbformat": 4, "nbformat_minor": max(int(notebook.get("nbformat_minor", 5)), 5),
            "metadata": dict(notebook.get("metadata", {})), "cells": cells}


def save_figures(notebook: Mapping[str, Any], folder: Path) -> list[str]:
    """Every PNG the notebook displayed, as ``figures/cell-N-K.png``; relative paths."""
    saved: list[str] = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        pngs = [output.get("data", {}).get("image/png") for output in cell.get("outputs", []) or []
                if isinstance(output, Mapping)]
        for count, png in enumerate(filter(None, pngs), start=1):
            target = folder / FIGURES_DIR / f"cell-{number}-{count}.png"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(base64.b64decode("".join(png) if isinstance(png, list) else png))
            saved.append(str(target.relative_to(folder)))
    return saved


def run_notebook_job(job_folder: str, workdir: str, kernel_name: str = "python3") -> dict[str, Any]:
    """On the node: run ``notebook.ipynb`` cell by cell, saving ``executed.ipynb`` each time.

    Stops at the first failing cell (as "Run All" does) and raises its error after saving.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    folder = Path(job_folder)
    notebook = nbformat.read(folder / NOTEBOOK_IN, as_version=4)
    target = folder / NOTEBOOK_OUT
    code_cells = sum(1 for c in notebook.cells if c.cell_type == "code")
    progress: dict[str, Any] = {"cells_done": 0, "cells": code_cells, "finished": False}

    def save() -> None:
        notebook.metadata["hpc_magics_job"] = dict(progress, saved_at=time.time())
        write_atomically(target, nbformat.writes(notebook))

    client = NotebookClient(notebook, kernel_name=kernel_name, timeout=None,
                            resources={"metadata": {"path": workdir}})
    # The runner forces Agg for itself; the kernel draws inline so figures land in outputs.
    saved = dict(os.environ)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for variable in ("DISPLAY", "WAYLAND_DISPLAY"):  # no window, no image viewer
        os.environ.pop(variable, None)
    failure: CellExecutionError | None = None
    try:
        with client.setup_kernel():
            save()
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as error:
                    failure = error
                    progress["failed_cell"] = index + 1
                    save()
                    break
                progress["cells_done"] += 1
                print(f"[hpc_magics] cell {index + 1} done "
                      f"({progress['cells_done']}/{code_cells})", flush=True)
                save()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    progress["finished"] = failure is None
    save()
    figures = save_figures(notebook, folder)
    if failure is not None:
        raise RuntimeError(f"cell {progress['failed_cell']} failed; the executed notebook up to "
                           f"it is {target}\n{failure}") from None
    return {"executed_notebook": str(target), "figures": figures}
