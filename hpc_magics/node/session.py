"""The session kernel's side of ``%%sbatch --session``: the names the notebook shipped
in, the names a cell assigned back, through files in the session's private job folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..jobfolder.files import load_own, write_atomically

SHIPPED_FILE = "session-in.pkl"
RESULTS_FILE = "session-out.pkl"


def receive(namespace: dict[str, Any], folder: str) -> list[str]:
    """Put the shipped names into this kernel's namespace; returns them."""
    from ..shipping.buffers import unpack

    path = Path(folder) / SHIPPED_FILE
    values = unpack(load_own(path), Path(folder))
    namespace.update(values)
    path.unlink()
    return sorted(values)


def send(namespace: dict[str, Any], folder: str, names: list[str]) -> list[str]:
    """Pickle the cell's assigned names (those that exist and pickle) for the notebook."""
    import cloudpickle

    from ..shipping.stream import pickling_error

    present = [name for name in names if name in namespace]
    # a lock, an open socket: it stays in the session
    refused = [name for name in present if pickling_error(namespace[name]) is not None]
    values = {name: namespace[name] for name in present if name not in refused}
    write_atomically(Path(folder) / RESULTS_FILE, cloudpickle.dumps(values))
    return refused
