"""notebooks/README.md, the course index, against the notebooks themselves, and the
conventions every workshop notebook is stored with (no kernel needed)."""

from __future__ import annotations

import re

import nbformat
import pytest

from .conftest import NOTEBOOKS

INDEX = NOTEBOOKS / "README.md"
ROW = re.compile(r"^\| \[([\w-]+)\]\(([\w-]+\.ipynb)\) \| (.+) \| (\d+) \|$", re.MULTILINE)
NOTEBOOK_FILES = sorted(NOTEBOOKS.glob("*.ipynb"))


def index_rows() -> dict[str, int]:
    """notebook file -> minutes, in the table's order."""
    rows = ROW.findall(INDEX.read_text())
    assert rows, "no table rows in notebooks/README.md"
    for name, link, _, _ in rows:
        assert link == f"{name}.ipynb", (name, link)
    return {link: int(minutes) for _, link, _, minutes in rows}


def test_every_notebook_is_in_the_index_in_teaching_order() -> None:
    rows = index_rows()
    missing = [path.name for path in NOTEBOOK_FILES if path.name not in rows]
    assert not missing, f"add them to the table in notebooks/README.md: {missing}"
    first, *_, last = rows
    assert (first, last) == ("getting-started.ipynb", "your-server.ipynb")


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.name)
def test_notebook_is_stored_clean_and_says_its_minutes(path: object) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    first = notebook.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    said = re.search(r"About (\d+) minutes", first.source)
    assert said, f"{path.name}: the first cell should end with 'About N minutes.'"
    assert int(said[1]) == index_rows()[path.name], \
        f"{path.name} says {said[1]} minutes, notebooks/README.md another"
