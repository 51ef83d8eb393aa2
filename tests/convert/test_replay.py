"""``%%sbatch --replay``: earlier cells rebuild state that cannot be shipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.convert.replay import replay_source

from .conftest import headless_env

HISTORY = [
    "%matplotlib inline\nimport threading\nimport matplotlib.pyplot as plt",
    "lock = threading.Lock()\nlog = open('log.txt', 'w')\nnumbers = iter(range(100))\n"
    "next(numbers)\nprint('shown in the notebook already')",
    "plt.plot([1, 2])\nplt.show()\nfiles = !ls\nlen(files)",
    "%%time\nbase = next(numbers) * 10",
]
CELL = ("with lock:\n    value = base + next(numbers)\nlog.write(f'value {value}\\n')\n"
        "log.close()\nprint('value', value)")


def _run(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    path = folder / "replay.py"
    path.write_text(code)
    done = subprocess.run([sys.executable, str(path)], cwd=folder, capture_output=True, text=True,
                          timeout=120, env=headless_env(None), check=False)
    assert done.returncode == 0, done.stderr
    return done


def test_replay_rebuilds_unpicklable_state_quietly(tmp_path: Path) -> None:
    code = replay_source(HISTORY, CELL)
    assert "# [display] plt.show()" in code
    done = _run(code, tmp_path)
    assert done.stdout.strip().splitlines()[-1] == "value 12"
    assert "shown in the notebook already" not in done.stdout
    assert (tmp_path / "log.txt").read_text() == "value 12\n"


def test_replay_from_the_kernels_own_history(tmp_path: Path) -> None:
    """IPython's ``In`` holds parsed cells (get_ipython() calls): they replay the same."""
    shell = InteractiveShell.instance()
    start = len(shell.user_ns["In"])
    for source in ["import os", "counter = iter(range(5))\nnext(counter)", "%time x = 7"]:
        shell.run_cell(source, store_history=True)
    history = shell.user_ns["In"][start:]
    assert any("get_ipython()" in entry for entry in history)
    code = replay_source(history, "print('sum', next(counter) + x)", quiet=False)
    assert "get_ipython" not in code
    assert _run(code, tmp_path).stdout.strip().splitlines()[-1] == "sum 8"


def test_cells_that_never_parsed_are_left_out_with_a_note(tmp_path: Path) -> None:
    code = replay_source(["x = 1", "def broken(:", "y = x + 1"], "print('y', y)")
    assert "history entry 2 left out: it is not valid Python" in code
    assert "y 2" in _run(code, tmp_path).stdout


def test_replayed_cell_runs_as_a_slurm_job(slurm_cluster: Any, tmp_path: Path) -> None:
    """What ``%%sbatch --replay`` submits: no shipped state, the history rebuilds it."""
    from hpc_magics.backends import get_backend
    from hpc_magics.core.profiles import load_profile
    from hpc_magics.core.resources import ResourceRequest
    from hpc_magics.handle import JobHandle
    from hpc_magics.jobfolder.folder import JobFolder
    from hpc_magics.shipping.packing import Payload

    workdir = tmp_path / "notebook folder"
    workdir.mkdir()
    history = [f"import os\nos.chdir({str(workdir)!r})", *HISTORY]
    payload = Payload(code=replay_source(history, CELL + "\nvalue * 2"),
                      result_names=("value",), capture_last_expression=True)
    request = ResourceRequest(profile="lab", partition="debug", time_s=300, backend="slurm")
    backend = get_backend("slurm", python=sys.executable)
    folder = JobFolder.create(tmp_path / "jobs", "replay")
    job_id = backend.submit(folder, payload, request, load_profile("lab"), "replay")
    handle = JobHandle(job_id, backend, folder, "replay")
    assert handle.wait(timeout=180) == "COMPLETED", handle.log()
    values = handle.fetch(show=False)
    assert values["value"] == 12 and values["_"] == 24
    assert (workdir / "log.txt").read_text() == "value 12\n"
