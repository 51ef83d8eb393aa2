"""The getting-started notebook, executed by a real kernel against the real cluster."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "getting-started.ipynb"


def cell_text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_getting_started_runs_on_the_cluster(tmp_path: Path, slurm_cluster: Any) -> None:
    copy = tmp_path / "getting started.ipynb"
    shutil.copy(NOTEBOOK, copy)
    notebook = nbformat.read(copy, as_version=4)
    NotebookClient(notebook, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    texts = [cell_text(c) for c in notebook.cells if c.cell_type == "code"]
    everything = "\n".join(texts)
    assert "#SBATCH --partition=debug" in everything and "node-h" in everything
    assert "trained on" in everything
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    after_job = next(cell_text(c) for c in code_cells if c.source.startswith("print(model"))
    *weights, loss = (float(v) for v in re.findall(r"-?\d+\.?\d*", after_job))
    assert weights == pytest.approx([2.0, -1.0, 0.5], abs=0.05)  # the trained model came back
    assert loss < 0.05
    assert "longer-run" in everything  # %hpc_jobs lists it
    jobs = list((tmp_path / "hpc_jobs").iterdir())
    assert len(jobs) == 3 and all((j / "job.sh").read_text().startswith("#!/bin/bash")
                                  for j in jobs)

    # %hpc_efficiency: accounting's figures against the request (-t 10 --mem 1G)
    efficiency = output_of(code_cells, "%hpc_efficiency")
    assert "state COMPLETED" in efficiency and "of 1.0G asked" in efficiency
    assert re.search(r"time \d+s of 10m", efficiency), efficiency

    # the sweep: one array of two tasks, and its table; the larger rate learns more in 100 steps
    sweep = next(j for j in jobs if "#SBATCH --array=0-1" in (j / "job.sh").read_text())
    rows = {float(rate): (float(loss), state) for rate, loss, state in re.findall(
        r"^\d+\s+([\d.]+)\s+([\d.]+)\s+(\w+)\s*$",
        output_of(code_cells, "import hpc_magics"), re.MULTILINE)}
    assert set(rows) == {0.01, 0.1} and {state for _, state in rows.values()} == {"COMPLETED"}
    assert rows[0.1][0] < 0.05 < rows[0.01][0]

    # %hpc_jobs --all: the one table, with every job of this notebook (and others'), the
    # sweep as one row of its kind
    listed = output_of(code_cells, "%hpc_jobs --all")
    for job in jobs:
        job_id = str(json.loads((job / "meta.json").read_text())["job_id"])
        kind = "sweep" if job == sweep else "cell"
        assert re.search(rf"^\s+{job_id}\s+\S+\s+{kind}\s", listed, re.M), (job_id, listed)

    # the way on: every workshop notebook is linked
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    for name in ("notebook-to-batch", "sweep-job-array", "multi-node", "checkpoint-requeue",
                 "your-server"):
        assert f"]({name}.ipynb)" in markdown


def output_of_cell(code_cells: list[Any], starts_with: str) -> Any:
    return next(c for c in code_cells if c.source.startswith(starts_with))


def output_of(code_cells: list[Any], starts_with: str) -> str:
    return cell_text(output_of_cell(code_cells, starts_with))
