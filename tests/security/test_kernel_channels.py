"""A Slurm kernel's channels are its user's alone: another user on the same hosts who
connects to its IOPub (a broadcast socket: anyone connected gets every output) reads
nothing. The kernel listens on the node's address (tcp); with CurveZMQ keys in its
private connection file, a client without them never completes the handshake."""

from __future__ import annotations

import json
import secrets
import stat
import sys
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from kernel.conftest import install, run_code, start

from .conftest import Intruder

pytestmark = [pytest.mark.timeout(240), pytest.mark.slurm]

# Runs as the other user: subscribes to everything on the URL until its stdin closes, then
# prints what it received (JSON, one line).
LISTEN = """
import json, sys, zmq
socket = zmq.Context().socket(zmq.SUB)
socket.setsockopt(zmq.SUBSCRIBE, b"")
socket.connect(sys.argv[1])
print("listening", flush=True)
poller = zmq.Poller()
poller.register(socket, zmq.POLLIN)
poller.register(sys.stdin, zmq.POLLIN)
frames = []
while True:
    ready = dict(poller.poll())
    if socket in ready:
        frames += [frame.decode(errors="replace") for frame in socket.recv_multipart()]
    if sys.stdin in ready or sys.stdin.fileno() in ready:
        break
print(json.dumps(frames))
"""


def test_another_user_reads_nothing_of_a_kernels_output(
        kernel_prefix: Path, started: list[KernelManager], intruder: Intruder) -> None:
    assert install("lab-private", kernel_prefix, "--profile", "lab", "-t", "10") == 0
    manager, client = start("lab-private", started)
    connection = manager.provisioner.folder.path / "connection.json"
    assert stat.S_IMODE(connection.stat().st_mode) == 0o600
    assert {"curve_publickey", "curve_secretkey"} <= set(json.loads(connection.read_text()))

    info = manager.get_connection_info()
    listener = intruder.start(sys.executable, "-c", LISTEN,
                              f"tcp://{info['ip']}:{info['iopub_port']}")
    assert listener.stdout is not None
    assert listener.stdout.readline().strip() == "listening", listener.stderr
    marker = secrets.token_hex(8)
    # printed while they listen: our client reads every line
    printed, reply = run_code(client, "import time\nfor i in range(20):\n"
                                      f"    print('{marker}', i, flush=True)\n"
                                      "    time.sleep(0.1)\n")
    assert reply["status"] == "ok" and printed.count(marker) == 20
    said, errors = listener.communicate(input="", timeout=60)  # their stdin closes: done
    assert listener.returncode == 0, errors
    received = json.loads(said.splitlines()[-1])
    assert received == [], f"{intruder.name} read the kernel's IOPub: {received[:4]}"
    log = (manager.provisioner.folder.path / "kernel.log").read_text(errors="replace")
    assert "without encryption" not in log  # ipykernel's own warning, for every bare kernel
