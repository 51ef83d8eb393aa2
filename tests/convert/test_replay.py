"""``%%sbatch --replay``: earlier cells rebuild state that cannot be shipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
