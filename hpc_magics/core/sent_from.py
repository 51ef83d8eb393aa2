"""Which notebook cell sent a job, recorded in its ``meta.json`` so that the server can
write the job's outputs into that cell when nobody has the notebook open.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SentFrom:
    """The notebook cell that sent a job, as its kernel recorded it."""

    notebook: str  # the notebook's path as the kernel knew it (``JPY_SESSION_NAME``)
    cell_id: str
    source_sha256: str  # of the cell's source as sent: an edit since changes it
    kernel_id: str = ""  # the server's id of the kernel that sent it

    def to_meta(self) -> dict[str, str]:
        """The ``meta.json`` key ``sent_from`` (the notebook is its key ``notebook``)."""
        return {"cell_id": self.cell_id, "source_sha256": self.source_sha256,
                "kernel_id": self.kernel_id}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> SentFrom | None:
        cell = meta.get("sent_from")
        if not isinstance(cell, dict) or not meta.get("notebook") or not cell.get("cell_id"):
            return None
        return cls(str(meta["notebook"]), str(cell["cell_id"]),
                   str(cell.get("source_sha256") or ""), str(cell.get("kernel_id") or ""))


def source_hash(source: str) -> str:
    """What tells a cell's source from an edited one."""
    return hashlib.sha256(source.encode()).hexdigest()
