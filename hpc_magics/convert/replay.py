"""``%%sbatch --replay``: the job rebuilds the notebook's state by running its earlier cells.

For state that does not pickle (open files, locks, generators, database connections, GPU
handles), shipping by value cannot work; running the cells that made it can.  The earlier
cells are converted exactly as ``hpc-magics convert`` converts a notebook (display code
stripped, magics translated, ``%%sbatch`` cells run in place), run quietly (their printed
output would only repeat the notebook's), then the cell runs as written.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._source import string_literal
from .script import ConversionError, helper_code, progress_cells, strip_cells, translate_cells

REPLAY_FILENAME = "<replayed notebook cells>"


def replay_source(history: Sequence[str], cell: str, *, quiet: bool = True) -> str:
    """Plain Python that runs ``history`` (the cells run before, oldest first) then ``cell``.

    ``history`` may be raw cells or IPython's parsed ones (``In``: ``get_ipython()`` calls);
    cells that do not parse (they failed in the notebook too) are left out with a note.
    """
    cells: list[dict[str, object]] = []
    notes: list[str] = []
    for number, source in enumerate(history, start=1):
        candidate = {"cell_type": "code", "source": source, "metadata": {}}
        try:
            translate_cells([candidate], set())
        except ConversionError:
            notes.append(f"# history entry {number} left out: it is not valid Python")
            continue
        cells.append({"cell_type": "code", "source": source, "metadata": {}})
    needs: set[str] = set()
    translate_cells(cells, needs)
    progress_cells(cells)
    strip_cells(cells)
    replayed = "\n\n".join(str(c["source"]).rstrip() for c in cells if str(c["source"]).strip())
    target = [{"cell_type": "code", "source": cell, "metadata": {}}]
    translate_cells(target, needs)
    progress_cells(target)
    parts = ["# %%sbatch --replay: the notebook's earlier cells first, to rebuild its state",
             *notes, helper_code(needs).strip()]
    if quiet:
        parts.append(
            "import contextlib as _contextlib\nimport io as _io\n\n"
            "with _contextlib.redirect_stdout(_io.StringIO()):  # the notebook showed it already\n"
            f"    exec(compile({string_literal(replayed + chr(10))}, {REPLAY_FILENAME!r}, "
            "'exec'), globals())")
    else:
        parts.append(replayed)
    parts += ["# the cell", str(target[0]["source"]).rstrip()]
    return "\n\n".join(p for p in parts if p) + "\n"
