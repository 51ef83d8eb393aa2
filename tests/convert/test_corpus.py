"""Real notebooks from HPC centres' trainings (``tests/corpus/SOURCES.md``): each converts with
``hpc-magics convert``, the script parses and has no display call left; those that run offline
run headless under plain python (displays raise there) and end with the notebook's values.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from .conftest import (
    SCRIPT_TIMEOUT_S,
    SNAPSHOT_CODE,
    convert,
    display_bound_names,
    variable_differences,
)

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
GUARD = CORPUS / "headless_guard"
MIN_NOTEBOOKS = 30


class Source(NamedTuple):
    name: str
    repository: str
    path: str
    commit: str
    offline: bool


def _sources() -> list[Source]:
    rows = []
    for line in (CORPUS / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 7 or cells[0] in ("name", "---"):
            continue
        rows.append(Source(cells[0], cells[1], cells[2], cells[3], cells[5].startswith("yes")))
    return rows


def _corpus_folder() -> Path | None:
    """Where the notebooks are: they are not committed (third-party code), see SOURCES.md."""
    for folder in (CORPUS, Path(os.environ.get("HPC_MAGICS_CORPUS", "/nonexistent")),
                   REPO.parent / "shared" / "corpus"):
        if (folder / "notebooks").is_dir():
            return folder
    return None


SOURCES = _sources()
FOLDER = _corpus_folder()
OFFLINE = [s for s in SOURCES if s.offline]


def _notebook_path(source: Source) -> Path | None:
    path = FOLDER / "notebooks" / f"{source.name}.ipynb" if FOLDER else None
    return path if path is not None and path.exists() else None


def _cases(sources: list[Source]) -> list[Any]:
    """One case per notebook; those absent here are not run (tests/conftest.py counts them)."""
    return [pytest.param(s, id=s.name, marks=() if _notebook_path(s) else pytest.mark.corpus_absent)
            for s in sources]


def _notebook(source: Source) -> Path:
    path = _notebook_path(source)
    assert path is not None, f"{source.name}: collected as present, gone since"
    return path


def _with_data(source: Source, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = FOLDER / "data" / source.name if FOLDER else None
    if data is not None and data.is_dir():
        shutil.copytree(data, folder, dirs_exist_ok=True)
    return folder


def _env(guard: bool) -> dict[str, str]:
    """No MPLBACKEND: the script must not need one to stay headless; the guard checks that."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPL", "JPY", "PYTHON"))}
    env.update(PYTHONPATH=os.pathsep.join([str(GUARD), str(REPO)]), PYTHONDONTWRITEBYTECODE="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    if guard:
        env["HPC_CORPUS_GUARD"] = "1"
    return env


def _convert_cli(notebook: Path, out: Path) -> Path:
    result = subprocess.run([sys.executable, "-m", "hpc_magics.cli", "convert", str(notebook),
                             "-o", str(out)], capture_output=True, text=True, timeout=120,
                            env=_env(guard=False), check=False)
    assert result.returncode == 0, f"convert refused {notebook.name}: {result.stderr.strip()}"
    return out / f"{notebook.stem}.py"


#: calls that display: a method of any object, or a function known by name
DISPLAY_METHODS = frozenset({"show", "display", "visualize", "hvplot", "_repr_html_"})
DISPLAY_FUNCTIONS = frozenset({"display", "display_html", "display_markdown", "clear_output",
                               "interact", "interactive"})
DISPLAY_MODULES = ("IPython.display", "IPython.core.display", "ipywidgets")


def _computing_widgets(tree: ast.AST) -> set[int]:
    """``w = interactive(f, ...)`` whose ``w.result`` is read computes ``f``: it must stay."""
    read = {node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and node.attr == "result" and isinstance(node.value, ast.Name)}
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "interactive"
            and any(isinstance(t, ast.Name) and t.id in read for t in node.targets)}


def display_left(script: str) -> list[str]:
    """The display calls and imports that remain in code that runs (comments do not count)."""
    found = []
    tree = ast.parse(script)
    kept_widgets = _computing_widgets(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in DISPLAY_METHODS:
                found.append(f"line {node.lineno}: .{func.attr}()")
            elif (isinstance(func, ast.Name) and func.id in DISPLAY_FUNCTIONS
                  and id(node) not in kept_widgets):
                found.append(f"line {node.lineno}: {func.id}()")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(DISPLAY_MODULES):
            if kept_widgets and node.module == "ipywidgets" and any(
                    alias.name == "interactive" for alias in node.names):
                continue  # the import a kept computing widget needs (importing shows nothing)
            found.append(f"line {node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith(DISPLAY_MODULES)]
        elif isinstance(node, ast.Name) and node.id == "get_ipython":
            found.append(f"line {node.lineno}: get_ipython")
    return found


def test_corpus_is_large() -> None:
    assert len(SOURCES) >= MIN_NOTEBOOKS, f"{len(SOURCES)} notebooks in SOURCES.md"
    assert len({s.name for s in SOURCES}) == len(SOURCES), "a name is listed twice"


@pytest.mark.parametrize("folder", [
    pytest.param(FOLDER, id="notebooks", marks=() if FOLDER else pytest.mark.corpus_absent)])
def test_corpus_is_complete(folder: Path) -> None:
    present = {p.stem for p in (folder / "notebooks").glob("*.ipynb")}
    assert present == {s.name for s in SOURCES}, (present ^ {s.name for s in SOURCES})


def test_display_left_finds_what_it_must() -> None:
    script = ("import matplotlib.pyplot as plt\nfrom IPython.display import HTML\n"
              "# plt.show()\nimg.filter(f).show()\ndisplay(df)\nx = 1\n")
    assert [f.split(": ")[1] for f in display_left(script)] == [
        "from IPython.display import", ".show()", "display()"]


@pytest.mark.parametrize("source", _cases(SOURCES))
def test_converts_parses_and_displays_nothing(source: Source, tmp_path: Path) -> None:
    script = _convert_cli(_notebook(source), tmp_path).read_text()
    try:
        ast.parse(script)
    except SyntaxError as error:
        pytest.fail(f"the script does not parse: line {error.lineno}: {error.msg}: {error.text}")
    assert not display_left(script), "display left in the script:\n" + "\n".join(
        display_left(script))


@pytest.mark.parametrize("source", _cases(OFFLINE))
def test_offline_notebook_script_headless_same_values(source: Source, tmp_path: Path) -> None:
    """The notebook on a real kernel, the script with plain python and the display guard."""
    from nbclient import NotebookClient

    path = _notebook(source)
    nb = nbformat.read(path, as_version=4)
    with_snapshot = nbformat.from_dict(json.loads(json.dumps(nb)))
    with_snapshot.cells.append(new_code_cell(SNAPSHOT_CODE))
    kernel_folder = _with_data(source, tmp_path / "notebook")
    NotebookClient(with_snapshot, timeout=SCRIPT_TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(kernel_folder)}}
                   ).execute(env=_env(guard=False))

    job = _with_data(source, tmp_path / "job")
    script = _convert_cli(path, tmp_path / "converted")
    (job / script.name).write_text(script.read_text() + "\n" + SNAPSHOT_CODE)
    result = subprocess.run([sys.executable, script.name], cwd=job, capture_output=True,
                            text=True, timeout=SCRIPT_TIMEOUT_S, env=_env(guard=True),
                            check=False)
    assert result.returncode == 0, f"script failed headless:\n{result.stderr[-3000:]}"
    conversion = convert(nb, path.stem)
    differences = variable_differences(kernel_folder, job, display_bound_names(conversion))
    assert not differences, "\n".join(differences)
