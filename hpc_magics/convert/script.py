"""The conversion steps on plain notebook cells, and the script they make.

Each step works on the list of cell dicts in place and never removes a cell (a skipped
cell becomes an empty raw cell with a note), so cell numbers in the script match the
notebook's.  ``convert_notebook`` runs them all (``hpc-magics convert`` and the nbconvert
exporter call it; the whole-notebook job calls the steps it needs) without importing
nbconvert, which keeps ``hpc-magics convert`` fast.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Collection, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError
from ..shipping.main_guard import guard_actions
from . import magics
from ._source import SourceEditor, comment_block, parsed
from .cells import SKIP, SKIP_TAGS, cell_policy, plain_cells, tags
from .display import strip_cells
from .progress import plain_progress_bars

Cell = MutableMapping[str, Any]


class ConversionError(HpcMagicsError):
    """The notebook cannot be turned into a script as it is."""


# ---------------------------------------------------------------------- the steps
def skip_cells(cells: list[Cell]) -> None:
    """Tagged cells become empty raw cells that remember why."""
    for index, cell in enumerate(cells):
        if cell_policy(cell) == SKIP:
            tag = next(t for t in tags(cell) if t in SKIP_TAGS)
            cells[index] = {"cell_type": "raw", "source": "", "id": cell.get("id", f"c{index}"),
                            "metadata": {"hpc_magics": {"skipped": tag}}}


def translate_cells(cells: Iterable[Cell], needs: set[str], *, strict: bool = True) -> list[str]:
    """IPython syntax → plain Python in every code cell; ``needs`` gets the helpers used.

    A cell that is not Python even as IPython input raises ``ConversionError`` when
    ``strict``; otherwise it is kept as a comment, with a warning naming it (returned).
    """
    bound: set[str] = set()
    warnings: list[str] = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"]
        try:
            translated = magics.translate_magics(source, bound)
        except SyntaxError as error:
            problem = f"cell {number} is not valid Python (line {error.lineno}: {error.msg})"
            if strict:
                raise ConversionError(f"{problem}: fix it or tag the cell hpc-skip") from None
            warnings.append(f"{problem}: kept as a comment; fix it or tag it hpc-skip")
            cell["source"] = (f"# [not python] {problem}, kept as a comment:\n"
                              + comment_block(source, "", "[not python]"))
            continue
        cell["source"] = translated.source
        needs.update(translated.needs)
        bound |= magics.bound_names(ast.parse(translated.source))  # it is Python now
    return warnings


def progress_cells(cells: Iterable[Cell]) -> None:
    for cell in cells:
        if cell.get("cell_type") == "code":
            cell["source"] = plain_progress_bars(cell["source"])


# ---------------------------------------------------------------------- the script
def hoist_futures(text: str) -> tuple[list[str], str]:
    """A cell's ``from __future__`` imports, and the cell without them.

    Python accepts them only at the top of a file: the script puts them there, above the
    code the converter adds, and leaves a comment where they were.
    """
    if "__future__" not in text or (tree := parsed(text)) is None:
        return [], text
    futures = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    editor = SourceEditor(text)
    for node in futures:
        editor.remove_statement(node, "[moved to the top of the script]")
    return [ast.unparse(node) + "\n" for node in futures], editor.result()


_HELPERS = {
    magics.OS: "import os\n",
    magics.SYS: "import sys\n",
    magics.SUBPROCESS: "import subprocess\n",
    magics.TIMER: "from time import perf_counter as _perf_counter\n",
    magics.IPYTHON: '''

def _ipython():
    """IPython's shell on this script's globals, for the magics with no plain-Python form,
    with the extensions a kernel loads by default (storemagic: %store)."""
    import sys

    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.shellapp import InteractiveShellApp
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False  # no history database on a shared file system
    shell = InteractiveShell.instance(config=config, user_module=sys.modules[__name__])
    for extension in InteractiveShellApp.default_extensions.default():
        shell.extension_manager.load_extension(extension)
    return shell
''',
}

_HEADLESS = """\
import os

# A batch job has no display: figures are drawn off-screen and saved, nothing opens a
# window, an image viewer or a browser.
os.environ["MPLBACKEND"] = "Agg"
for _variable in ("DISPLAY", "WAYLAND_DISPLAY"):
    os.environ.pop(_variable, None)
os.environ["BROWSER"] = "true"
"""


def helper_code(needs: Collection[str]) -> str:
    """The imports and helper functions translated magics use (see ``magics``)."""
    return "".join(text for name, text in _HELPERS.items() if name in needs)


def render_script(name: str, cells: Sequence[Mapping[str, Any]], needs: Collection[str]) -> str:
    """The batch script: header, headless set-up, helpers, then one ``# %%`` block per cell."""
    body: list[str] = []
    futures: list[str] = []
    defined: set[str] = set()  # names bound outside the guard, for the cells after
    for number, cell in enumerate(cells, start=1):
        kind, text = cell.get("cell_type"), cell["source"]
        note = cell.get("metadata", {}).get("hpc_magics", {})
        if kind == "code":
            hoisted, text = hoist_futures(text)
            futures += hoisted
            text = guard_actions(text, defined)
            body.append(f"# %% cell {number}\n{text.rstrip()}\n" if text.strip()
                        else f"# %% cell {number} (empty)\n")
        elif isinstance(note, Mapping) and note.get("skipped"):
            body.append(f"# %% cell {number} left out (tag {note['skipped']})\n")
        elif text.strip():
            label = "markdown" if kind == "markdown" else "raw"
            lines = "".join(f"# {line}".rstrip() + "\n" for line in text.rstrip().splitlines())
            body.append(f"# %% [{label}]\n{lines}")
    header = (
        "#!/usr/bin/env python\n"
        f'"""{name}.ipynb as a batch script, made by `hpc-magics convert`.\n\n'
        "Run it with plain python; it never needs a display.  Display code is commented out\n"
        'as "# [display]" (figures that are saved stay), values a cell only showed as\n'
        '"# [output]", and IPython magics are translated to plain Python.  What a cell does\n'
        'runs under `if __name__ == "__main__":`; imports, functions and classes stay outside,\n'
        'so worker processes (multiprocessing, dask) that import this script again find them\n'
        'without running the notebook again.\n"""\n')
    helpers = helper_code(set(needs) - {magics.OS})  # the headless set-up imports os
    return (header + "".join(dict.fromkeys(futures)) + _HEADLESS
            + ("\n" + helpers if helpers else "") + "\n\n" + "\n\n".join(body))


# ---------------------------------------------------------------------- all at once
@dataclass(frozen=True)
class Conversion:
    script: str
    removed: tuple[tuple[str, ...], ...]  # per code cell, the statements that went
    warnings: tuple[str, ...] = ()  # cells kept as comments, one line each


def convert_notebook(notebook: Mapping[str, Any], name: str, *, comment_removed: bool = True,
                     strict: bool = False) -> Conversion:
    """Run every step on a notebook (a dict as read from JSON; outputs are ignored)."""
    cells: list[Cell] = plain_cells(notebook)
    needs: set[str] = set()
    skip_cells(cells)
    warnings = translate_cells(cells, needs, strict=strict)
    progress_cells(cells)
    removed = strip_cells(cells, comment_removed)
    script = render_script(name, cells, needs)
    return Conversion(script, tuple(tuple(r) for r in removed), tuple(warnings))


def read_notebook(path: Path) -> dict[str, Any]:
    """A notebook file as a dict, without its outputs (a batch script never needs them)."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such notebook: check the path") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path} is not a notebook (invalid JSON: {error})") from None
    if not isinstance(data, dict) or "cells" not in data:
        if isinstance(data, dict) and data.get("nbformat", 4) < 4:  # pragma: no cover - rare
            import nbformat

            return dict(nbformat.reads(json.dumps(data), as_version=4))
        raise ConversionError(f"{path} is not a Jupyter notebook (no cells): pass an .ipynb file")
    for cell in data["cells"]:
        cell.pop("outputs", None)
    return data
