"""The cell's namespace as the process's ``__main__``, so worker processes started with
``spawn`` or ``forkserver`` find the cell's functions and classes (they import the parent's
main module again, from its ``__file__``; submitit's has none of them).

The first time a worker asks for ``__file__``, a small script and the payload are written
to the job folder; in the worker it rebuilds the shipped namespace and runs the cell's
definitions (``shipping/main_guard.py``), never what the cell does. As in a script with a
``__main__`` guard, values the cell computed are not there: pass them as arguments.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from ..jobfolder.files import write_atomically
from ..shipping.packing import Payload

WORKER_MAIN = "worker_main.py"
WORKER_PAYLOAD = "worker-payload.pkl"


class CellModule(types.ModuleType):
    """``__main__`` while the cell runs; its ``__file__`` is written when first asked for."""

    payload: Payload
    folder: Path

    @property
    def __file__(self) -> str:  # type: ignore[override]  # a plain attribute in ModuleType
        script = self.folder / WORKER_MAIN
        if not script.exists():
            import cloudpickle

            payload = replace(self.payload, buffers=())  # the job maps the buffer files
            write_atomically(self.folder / WORKER_PAYLOAD, cloudpickle.dumps(payload))
            write_atomically(script, (
                "# A worker process of the cell runs this as its main module: the cell's\n"
                "# shipped namespace and definitions, not the cell (hpc_magics.node.worker_main)\n"
                "from hpc_magics.node.runner import rebuild_for_worker\n\n"
                f"rebuild_for_worker(globals(), {str(self.folder)!r})\n"))
        return str(script)


def cell_module(payload: Payload, folder: Path) -> CellModule:
    """A module for this cell; payload and folder are its class's, never names of the cell."""
    kind = type("CellModule", (CellModule,), {"payload": payload, "folder": folder})
    module = kind("__main__")
    module.__spec__ = None  # a worker finds the main module by its file, not by a name
    return module


@contextlib.contextmanager
def as_main(module: types.ModuleType) -> Iterator[None]:
    """``module`` is ``__main__`` (and multiprocessing's ``__mp_main__`` alias) meanwhile."""
    saved = {name: sys.modules.get(name) for name in ("__main__", "__mp_main__")}
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module
    try:
        yield
    finally:
        for name, original in saved.items():
            if original is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = original
