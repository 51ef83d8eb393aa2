"""A whole notebook as one job: prepared, run cell by cell, saved after every cell."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest

from hpc_magics.convert.notebook_job import NOTEBOOK_OUT, prepare_notebook

from .conftest import NOTEBOOKS, VENV_BIN, headless_env, notebook, tagged

if TYPE_CHECKING:
    from conftest import SlurmCluster

TIMEOUT_S = 300


def hpc_magics(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "hpc-magics"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
                          env=headless_env(None))


def _executed(folder: Path) -> nbformat.NotebookNode:
    [path] = folder.glob(f"hpc_jobs/*/{NOTEBOOK_OUT}")
    return nbformat.read(path, as_version=4)


def test_prepared_notebook_leaves_out_skips_and_installs() -> None:
    nb = notebook("%pip install numpy\n!pip install -q rich\nimport numpy as np",
                  tagged("raise SystemExit", "hpc-skip"),
                  "from tqdm.notebook import tqdm\n%matplotlib inline\n!echo kept")
    prepared = prepare_notebook(nb)
    sources = [c["source"] for c in prepared["cells"]]
    assert sources[0].startswith("# %pip install numpy: dropped, install packages before")
    assert "# !pip install -q rich: dropped" in sources[0] and "import numpy as np" in sources[0]
    assert prepared["cells"][1]["cell_type"] == "raw" and sources[1] == ""
    assert sources[2] == "from tqdm import tqdm\n%matplotlib inline\n!echo kept"
    assert all(c.get("outputs") == [] for c in prepared["cells"] if c["cell_type"] == "code")


def test_prepared_notebook_can_strip_display() -> None:
    nb = notebook("import matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\n%time x = 1")
    prepared = prepare_notebook(nb, strip_display=True)
    helpers, cell = prepared["cells"]
    assert "_perf_counter" in helpers["source"]
    assert "# [display] plt.show()" in cell["source"] and "x = 1" in cell["source"]


def test_prepared_notebook_defines_what_its_translated_magics_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``%env`` becomes ``os.environ[...] = ...``: the helper cell imports os (it did not)."""
    monkeypatch.delenv("HPC_PREPARED_MODE", raising=False)
    helpers, cell = prepare_notebook(notebook("%env HPC_PREPARED_MODE=batch"),
                                     strip_display=True)["cells"]
    exec(helpers["source"] + cell["source"], {})  # the cells the kernel runs
    assert os.environ.pop("HPC_PREPARED_MODE") == "batch"


def test_submit_command_runs_the_notebook_and_keeps_outputs_and_figures(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOKS / "weather_pandas.ipynb", as_version=4)
    nbformat.write(nb, tmp_path / "weather.ipynb")
    done = hpc_magics("submit", "weather.ipynb", "--backend", "local", "--wait", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "executed notebook (saved after every cell)" in done.stdout
    executed = _executed(tmp_path)
    progress = executed.metadata["hpc_magics_job"]
    assert progress["finished"] and progress["cells_done"] == progress["cells"] == 10
    describe = executed.cells[4]
    assert describe.outputs and "text/html" in describe.outputs[0]["data"]
    assert (tmp_path / "results.json").exists(), "the notebook runs in its own folder"
    [job] = (tmp_path / "hpc_jobs").iterdir()
    figures = sorted(p.name for p in (job / "figures").glob("*.png"))
    assert "cell-6-1.png" in figures and "cell-9-1.png" in figures


def test_submit_puts_jobs_where_the_kernel_would_and_says_why_it_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HPC_MAGICS_JOBS_DIR, relative to the notebook's folder as for its kernel there (so
    %hpc_jobs lists the job); a failure ends with the outcome's reason, not FAILED alone."""
    (tmp_path / "work").mkdir()
    nbformat.write(notebook("x = 1", "raise ValueError('on purpose')", "print('never')"),
                   tmp_path / "work" / "fails.ipynb")
    monkeypatch.setenv("HPC_MAGICS_JOBS_DIR", "scratch/jobs")
    done = hpc_magics("submit", "work/fails.ipynb", "--backend", "local", "--wait",
                      cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    [job] = (tmp_path / "work" / "scratch" / "jobs").iterdir()
    assert not (tmp_path / "work" / "hpc_jobs").exists()
    last = done.stdout.strip().splitlines()[-1]
    assert last.endswith(f"FAILED: cell 2 failed; the executed notebook up to it is "
                         f"{job / NOTEBOOK_OUT}"), last


@pytest.mark.slow  # a time limit of one minute runs out
def test_time_limit_keeps_the_outputs_of_finished_cells(slurm_cluster: SlurmCluster,
                                                        tmp_path: Path) -> None:
    nbformat.write(notebook("print('first cell')", "import time\nprint('second cell')",
                            "time.sleep(600)", "print('never')"), tmp_path / "long.ipynb")
    started = time.monotonic()
    done = hpc_magics("submit", "long.ipynb", "--profile", "lab", "-t", "1", "--wait",
                      cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "TIMEOUT" in done.stdout
    assert time.monotonic() - started < TIMEOUT_S
    executed = _executed(tmp_path)
    assert executed.cells[0].outputs[0]["text"] == "first cell\n"
    assert executed.cells[1].outputs[0]["text"] == "second cell\n"
    assert executed.cells[3].outputs == []
    assert executed.metadata["hpc_magics_job"]["cells_done"] == 2
    assert not executed.metadata["hpc_magics_job"]["finished"]
