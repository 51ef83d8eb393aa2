"""Helpers for conversion tests: in-memory notebooks, headless script runs, real kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from hpc_magics.convert.script import Conversion, convert_notebook

VENV_BIN = Path(sys.executable).parent
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SCRIPT_TIMEOUT_S = 120
VIEWERS = ("xdg-open", "display", "eog", "feh", "see", "open", "firefox", "x-www-browser",
           "sensible-browser", "www-browser")


def notebook(*cells: Any, metadata: Mapping[str, Any] | None = None) -> nbformat.NotebookNode:
    """Code cells from strings; other cells as built by nbformat's builders."""
    built = [new_code_cell(c) if isinstance(c, str) else c for c in cells]
    nb = new_notebook(cells=built, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}, **(metadata or {})})
    return nb


def tagged(source: str, *tags: str) -> nbformat.NotebookNode:
    return new_code_cell(source, metadata={"tags": list(tags)})


markdown = new_markdown_cell
raw = new_raw_cell


def convert(nb: Mapping[str, Any], name: str = "nb") -> Conversion:
    return convert_notebook(json.loads(json.dumps(nb)), name)


def live_lines(script: str) -> list[str]:
    """The lines of the cells that run: neither comments nor blank."""
    cells = script[script.find("\n# %%"):]
    return [line.strip() for line in cells.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def runs(script: str, fragment: str) -> bool:
    """``fragment`` is part of a line that runs (or, for a comment, is in the script)."""
    if fragment.startswith("#"):
        return fragment in script
    return any(fragment in line for line in live_lines(script))


def commented(script: str, fragment: str) -> bool:
    return any(fragment in line and line.strip().startswith("#") for line in script.splitlines())


@pytest.fixture
def viewer_trap(tmp_path: Path) -> Path:
    """A PATH folder whose image viewers and browsers leave a mark when started."""
    folder = tmp_path / "viewers"
    folder.mkdir()
    for name in VIEWERS:
        program = folder / name
        program.write_text(f"#!/bin/sh\necho {name} \"$@\" >> {folder}/STARTED\n")
        program.chmod(0o755)
    return folder


def headless_env(viewer_trap: Path | None) -> dict[str, str]:
    """An environment that would open windows if the script let it: a display, TkAgg."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPL", "JPY"))}
    env.update(MPLBACKEND="TkAgg", DISPLAY=":0", PYTHONDONTWRITEBYTECODE="1")
    path = [str(VENV_BIN), env.get("PATH", "/usr/bin:/bin")]
    if viewer_trap is not None:
        path.insert(0, str(viewer_trap))
    env["PATH"] = os.pathsep.join(path)
    return env


def run_script(script: Path, cwd: Path, viewer_trap: Path | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run a converted script with plain python, as a batch job would."""
    result = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True,
                            timeout=SCRIPT_TIMEOUT_S, env=headless_env(viewer_trap), check=False)
    assert result.returncode == 0, f"script failed:\n{result.stdout}\n{result.stderr}"
    return result


def run_converted(nb: Mapping[str, Any], folder: Path, viewer_trap: Path | None = None
                  ) -> tuple[str, subprocess.CompletedProcess[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    script = convert(nb).script
    path = folder / "nb.py"
    path.write_text(script)
    return script, run_script(path, folder, viewer_trap)


def execute_notebook(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Run the original notebook on a real python3 kernel, in ``folder``."""
    from nbclient import NotebookClient

    folder.mkdir(parents=True, exist_ok=True)
    copy = nbformat.from_dict(json.loads(json.dumps(nb)))
    NotebookClient(copy, timeout=SCRIPT_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return copy
