"""Which cells run in the batch job: a pure decision on a cell's type and tags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SKIP_TAGS = frozenset({"hpc-skip", "remove_cell", "skip-execution"})
KEEP_TAGS = frozenset({"hpc-keep"})

RUN, RUN_AS_IS, SKIP, TEXT = "run", "run-as-is", "skip", "text"


def tags(cell: Mapping[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def cell_policy(cell: Mapping[str, Any]) -> str:
    """``run`` (stripped), ``run-as-is`` (``hpc-keep``), ``skip``, or ``text`` (never runs).

    A skip tag wins over a keep tag: leaving a cell out is the safer reading of both.
    """
    if cell.get("cell_type") != "code":
        return TEXT
    cell_tags = set(tags(cell))
    if cell_tags & SKIP_TAGS:
        return SKIP
    if cell_tags & KEEP_TAGS:
        return RUN_AS_IS
    return RUN


def plain_cells(notebook: Mapping[str, Any], id_prefix: str = "") -> list[Any]:
    """The notebook's cells as plain dicts: type, id, metadata and source as one string."""
    return [{"cell_type": c.get("cell_type"), "id": c.get("id", f"{id_prefix}{i}"),
             "metadata": dict(c.get("metadata", {})), "source": source_text(c)}
            for i, c in enumerate(notebook.get("cells", []))]


def source_text(cell: Mapping[str, Any]) -> str:
    """A cell's source as one string (nbformat allows a list of lines on disk)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
