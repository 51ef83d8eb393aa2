"""``hpc-magics doctor``'s job on a node: ``python -m hpc_magics.node.doctor_probe FOLDER
[--listen]``, run by the interpreter a cell's job would run.

It writes ``answer.json``: this Python, the versions of what a cell needs on the node, or
why one does not import. With ``--listen`` it also opens a port where a Slurm kernel would
listen and waits ``LISTEN_S`` at most for the doctor to connect: the kernel ports' check.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import socket
import sys
from importlib import metadata
from pathlib import Path

from ..jobfolder.files import write_atomically

ANSWER_FILE = "answer.json"
LISTEN_S = 60.0  # the doctor connects as soon as it reads the answer
NEEDED = ("cloudpickle", "submitit")  # what a cell's job imports on the node


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def answer() -> dict[str, object]:
    versions, errors = {"hpc_magics": _version("hpc_magics")}, {}
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as error:  # any failure to import is the answer
            errors[name] = f"{type(error).__name__}: {error}"
        else:
            versions[name] = _version(name)
    return {"host": socket.gethostname(), "node": os.environ.get("SLURMD_NODENAME", ""),
            "python": sys.executable, "python_version": platform.python_version(),
            "versions": versions, "import_errors": errors}


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m hpc_magics.node.doctor_probe FOLDER [--listen]")
    folder = Path(argv[0])
    found = answer()
    listener = None
    if "--listen" in argv[1:]:
        from .kernel import node_address

        try:
            address = node_address()  # where a Slurm kernel listens, never all addresses
        except SystemExit as error:  # says why: a kernel could not start here either
            found["address_error"] = str(error)
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind((address, 0))
            listener.listen(1)
            found["address"], found["port"] = listener.getsockname()
    write_atomically(folder / ANSWER_FILE, json.dumps(found).encode())
    if listener is not None:
        listener.settimeout(LISTEN_S)
        try:
            connection, _ = listener.accept()
            connection.close()
        except OSError:
            pass  # no one came: the doctor says so on its side
        finally:
            listener.close()


if __name__ == "__main__":
    main(sys.argv[1:])
