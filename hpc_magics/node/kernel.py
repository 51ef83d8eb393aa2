"""A Slurm kernel's node side: ``python -m hpc_magics.node.kernel FOLDER -- ARGV…``.

It writes the kernel's connection file (0600, listening on Slurm's ``NodeAddr`` only) and
``node.json`` (job, step, host) into the private job folder, then becomes the kernel
(``exec``), so signals sent to the step reach it. An ipykernel gets the walltime warnings
(``walltime.py``) and, in ``KERNEL_TARGET_ENV``, what ends it and nothing else.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from ..jobfolder.files import move_into_place, write_atomically
from ..jobfolder.folder import JobFolder
from .walltime import EXTENSION_ARGUMENT

CONNECTION_FILE = "connection.json"
CURVE = "curve"  # jupyter_client's name for CurveZMQ transport encryption
NODE_FILE = "node.json"
IPYKERNEL_MODULES = {"ipykernel_launcher", "ipykernel"}  # ``python -m ipykernel_launcher``
PYTHON_NAMES = {"python", "python3", f"python{sys.version_info[0]}"}
# what scancel acts on to end this kernel: its job, or ``JOB.STEP`` in the user's allocation
KERNEL_TARGET_ENV = "HPC_MAGICS_KERNEL_TARGET"


def scancel_target(job_id: str, step_id: str, allocation: bool) -> str | None:
    """What scancel acts on to end a Slurm kernel and nothing else: its step in the user's
    allocation (never the allocation), else its own job. None for a step not started yet."""
    if allocation:
        return f"{job_id}.{step_id}" if step_id else None
    return job_id


def node_address() -> str:
    """The address Slurm reaches this node by (``NodeAddr``), else the host name's; never a
    wildcard: the kernel listens on this one address only."""
    name = os.environ.get("SLURMD_NODENAME", "")
    address = ""
    if name:
        from ..core.errors import HpcMagicsError
        from ..scheduler import commands

        try:
            answer = commands.run(["scontrol", "show", "node", "-o", name], timeout=20)
            fields = dict(item.split("=", 1) for item in answer.stdout.split() if "=" in item)
            address = fields.get("NodeAddr", "") if answer.ok else ""
        except HpcMagicsError:
            address = ""
    try:
        resolved = socket.gethostbyname(address or socket.gethostname())
    except OSError:
        resolved = ""
    if not resolved or resolved.startswith("0."):
        raise SystemExit(f"hpc_magics kernel: cannot tell this node's address (NodeAddr "
                         f"{address or 'unknown'}, host {socket.gethostname()}): ask the site")
    return resolved


def kernel_argv(template: Sequence[str], connection_file: Path) -> list[str]:
    """The wrapped kernel's argv with its connection file, and "python" as this Python."""
    argv = [part.replace("{connection_file}", str(connection_file)) for part in template]
    if argv and argv[0] in PYTHON_NAMES:
        argv[0] = sys.executable
    if any(part in IPYKERNEL_MODULES for part in argv):
        argv.append(EXTENSION_ARGUMENT)  # warns in the notebook before the time limit
    return argv


def curve_keys(folder: Path) -> tuple[bytes, bytes] | tuple[None, None]:
    """A CurveZMQ key pair (public, secret) when the provisioner asked for one: the kernel
    then talks only to clients that read its private connection file (IOPub too)."""
    if JobFolder(folder).meta().get("encryption") != CURVE:
        return None, None
    import zmq

    return zmq.curve_keypair()


def prepare(folder: Path) -> Path:
    """Write the connection file and node.json; returns the connection file's path."""
    from jupyter_client.connect import write_connection_file

    env = os.environ
    address = node_address()
    connection = folder / CONNECTION_FILE
    # jupyter_client picks free ports by binding them on this address, and writes 0600
    public, secret = curve_keys(folder)
    scratch, _ = write_connection_file(
        str(folder / f".ports.{secrets.token_hex(4)}.json"), ip=address, transport="tcp",
        key=secrets.token_hex(32).encode(), signature_scheme="hmac-sha256",
        curve_publickey=public, curve_secretkey=secret)
    move_into_place(scratch, connection)
    os.chmod(connection, 0o600)
    # "node": Slurm's name of it, the name `--tunnel ssh` reaches it by from the login host
    node = {"host": socket.gethostname(), "node": env.get("SLURMD_NODENAME", ""),
            "address": address,
            "job_id": env.get("SLURM_JOB_ID", ""), "step_id": env.get("SLURM_STEP_ID", ""),
            "pid": os.getpid()}
    write_atomically(folder / NODE_FILE, json.dumps(node).encode())
    return connection


def main(argv: Sequence[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: python -m hpc_magics.node.kernel FOLDER -- KERNEL ARGV…")
    os.umask(0o077)
    folder = Path(argv[0])
    connection = prepare(folder)
    command = kernel_argv(argv[2:], connection)
    target = scancel_target(os.environ.get("SLURM_JOB_ID", ""),
                            os.environ.get("SLURM_STEP_ID", ""),
                            bool(JobFolder(folder).meta().get("allocation")))
    if target:
        os.environ[KERNEL_TARGET_ENV] = target
    sys.stdout.flush()
    os.execvp(command[0], command)  # the kernel the user installed; no shell


if __name__ == "__main__":
    main(sys.argv[1:])
