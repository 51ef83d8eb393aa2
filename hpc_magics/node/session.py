"""The session kernel's side of ``%%sbatch --session``: take the names the notebook
shipped into this kernel's namespace, and hand the names a cell assigned back.

Both directions go through files in the session's private job folder; a file is loaded
only when this user owns it and nobody else may write it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..jobfolder.files import load_own, write_atomically

SHIPPED_FILE = "session-in.pkl"
RESULTS_FILE = "session-out.pkl"


def receive(namespace: dict[str, Any], folder: str) -> list[str]:
    """Put the shipped names into this kernel's namespace; returns them."""
    import importlib

    from ..shipping.buffers import open_buffers
    from ..shipping.stream import load_names

    path = Path(folder) / SHIPPED_FILE
    payload = load_own(path)
    values = dict(load_names(payload.state, payload.state_names,
                             open_buffers(payload, Path(folder))))
    values.update({name: importlib.import_module(module)
                   for name, module in payload.modules.items()})
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
