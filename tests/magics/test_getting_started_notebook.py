"""The getting-started notebook, executed by a real kernel against the real cluster."""

from __future__ import annotations

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
    assert len(jobs) == 2 and all((j / "job.sh").read_text().startswith("#!/bin/bash")
                                  for j in jobs)
