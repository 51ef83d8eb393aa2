"""Helpers for conversion tests: in-memory notebooks, headless script runs, real kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Collection, Mapping
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


# ---------------------------------------------------------------------- same variables
VARIABLES_FILE = "variables.pkl"
#: names IPython puts in a kernel's namespace (the script has none of them)
KERNEL_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
#: the same random state in kernel and script, so a notebook's unseeded draws compare too
SEED_CODE = """\
def _hpc_seed():
    import importlib.util
    import random

    random.seed(1234)
    if importlib.util.find_spec("numpy"):
        import numpy

        numpy.random.seed(1234)


_hpc_seed()
"""
SNAPSHOT_CODE = f'''
def _hpc_snapshot():
    """Every variable of this namespace, pickled on its own (None: it does not pickle)."""
    import pickle
    import types

    skip = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)
    values = {{}}
    for name, value in list(globals().items()):
        if name.startswith("_") or name in {sorted(KERNEL_NAMES)!r} or isinstance(value, skip):
            continue
        try:
            values[name] = pickle.dumps(value)
        except Exception:
            values[name] = None
    with open({VARIABLES_FILE!r}, "wb") as handle:
        pickle.dump(values, handle)


_hpc_snapshot()
'''


DISPLAY_MODULES = ("matplotlib", "plotly", "altair", "bokeh", "holoviews", "ipywidgets",
                   "IPython.core.display", "IPython.display")


def same_value(a: Any, b: Any) -> bool:
    """Equal as values: arrays and frames element-wise (NaN equals NaN), containers deeply."""
    import numpy as np
    import pandas as pd

    if isinstance(a, (pd.DataFrame, pd.Series, pd.Index)):
        return type(a) is type(b) and a.equals(b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == object == b.dtype:
        return a.shape == b.shape and all(
            same_value(x, y) for x, y in zip(a.flat, b.flat, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is type(b) and type(a).__module__.startswith(DISPLAY_MODULES):
        return True  # a figure or widget: what it shows is not a computed value
    import pickle

    try:
        if a == b:
            return True
        identity = type(a) is type(b) and not a == pickle.loads(pickle.dumps(a))
    except Exception:  # == raises, or a copy cannot be made: same type is all we can say
        return type(a) is type(b)
    if not identity:
        return False
    # == means "the same object" (iterators, random generators, files in memory): compare state
    if hasattr(a, "__dict__") and vars(a):
        return same_value(vars(a), vars(b))
    return pickle.dumps(a) == pickle.dumps(b)


def variable_differences(notebook_folder: Path, script_folder: Path,
                         display_names: Collection[str] = ()) -> list[str]:
    """What differs between the two snapshots: missing names and unequal values.

    ``display_names``: names only display code bound (``fig, ax = plt.subplots()``): the
    script may lack them.
    """
    import pickle

    ran = {side: pickle.loads((folder / VARIABLES_FILE).read_bytes())
           for side, folder in (("notebook", notebook_folder), ("script", script_folder))}
    notebook_vars, script_vars = ran["notebook"], ran["script"]
    differences = [f"{name}: only in the notebook"
                   for name in notebook_vars.keys() - script_vars.keys() - set(display_names)]
    differences += [f"{name}: only in the script"
                    for name in script_vars.keys() - notebook_vars.keys()]
    for name in sorted(notebook_vars.keys() & script_vars.keys()):
        pickled_nb, pickled_script = notebook_vars[name], script_vars[name]
        if pickled_nb is None or pickled_script is None:
            if (pickled_nb is None) != (pickled_script is None):
                differences.append(f"{name}: pickles on one side only")
            continue
        try:
            equal = same_value(pickle.loads(pickled_nb), pickle.loads(pickled_script))
        except Exception:  # a class the notebook defined: its pickled state must match
            equal = pickled_nb == pickled_script
        if not equal:
            differences.append(f"{name}: differs")
    return differences


def display_bound_names(conversion: Conversion) -> set[str]:
    """Names that only the removed display statements bound."""
    import ast
    import textwrap

    from hpc_magics.convert.magics import bound_names

    names: set[str] = set()
    for removed in conversion.removed:
        for statement in removed:
            try:
                names |= bound_names(ast.parse(textwrap.dedent(statement)))
            except SyntaxError:
                continue
    return names


def assert_same_variables(nb: nbformat.NotebookNode, folder: Path,
                          viewer_trap: Path | None = None) -> str:
    """Run ``nb`` on a real kernel and its conversion with plain python; every variable that
    can be compared must be equal.  Returns the converted script."""
    seeded = nbformat.from_dict(json.loads(json.dumps(nb)))
    seeded.cells.insert(0, new_code_cell(SEED_CODE))  # unseeded random draws match too
    with_snapshot = nbformat.from_dict(json.loads(json.dumps(seeded)))
    with_snapshot.cells.append(new_code_cell(SNAPSHOT_CODE))
    execute_notebook(with_snapshot, folder / "notebook")
    conversion = convert(seeded)
    script = conversion.script + "\n" + SNAPSHOT_CODE
    (folder / "job").mkdir(parents=True, exist_ok=True)
    (folder / "job" / "nb.py").write_text(script)
    run_script(folder / "job" / "nb.py", folder / "job", viewer_trap)
    differences = variable_differences(folder / "notebook", folder / "job",
                                       display_bound_names(conversion))
    assert not differences, "\n".join(differences) + "\n\n" + script
    return conversion.script
