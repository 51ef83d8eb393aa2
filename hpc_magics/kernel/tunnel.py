"""How the login host reaches a Slurm kernel: straight by TCP, or an SSH tunnel.

``tcp``: the client connects to the node's address, where the kernel listens. ``ssh``, where
the nodes' ports are closed to the login host: one ``ssh -N`` forwards the kernel's five
ports from ``127.0.0.1`` here to the node (the user's ``~/.ssh/config`` applies; a
profile's ``[kernel] ssh_options`` come first).

jupyter_client's own helpers (``jupyter_client.ssh.tunnel``, pyzmq's ``zmq.ssh.tunnel``) do
not fit: one ``ssh -f`` per port through pexpect that no one can close, a possible password
prompt on the server's terminal, local ports picked by binding all interfaces.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InvalidRequest, SubmissionError
from ..core.profiles import ClusterProfile
from ..scheduler import commands

TUNNELS = ("tcp", "ssh")  # the node's address directly; the ports forwarded through ssh
PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
LOCAL_ADDRESS = "127.0.0.1"  # the forwarded ports are this user's machine's only
READY_WITHIN_S = 30.0  # connect, authenticate, bind the forwards
CONNECT_TIMEOUT_S = 15
CLOSED_WITHIN_S = 5.0
# not the user's to change: no prompt, a failed forward fails, ssh stays in front (its
# process is the tunnel's handle), a dead node ends it
FIXED_OPTIONS = ("BatchMode=yes", "ExitOnForwardFailure=yes", "ControlMaster=yes",
                 "ControlPersist=no", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                 "ServerAliveInterval=15", "ServerAliveCountMax=4")
NODE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
PORT_TRIES = 3
# ssh's words when a local forward's port was taken: "bind [127.0.0.1]:P: Address already
# in use", "cannot listen to port: P"
PORT_TAKEN = re.compile(r"Address already in use|cannot listen to port")


def choose(requested: str | None, profile: ClusterProfile) -> str:
    """The tunnel a kernel uses: the one asked for, else the profile's, else ``tcp``."""
    value = requested or profile.kernel.get("tunnel") or "tcp"
    if value not in TUNNELS:
        where = "--tunnel" if requested else f"[kernel] tunnel in profile {profile.name!r}"
        raise InvalidRequest(f"{where} {value!r} is not a tunnel: use "
                             f"{' or '.join(TUNNELS)}")
    if value == "ssh" and shutil.which("ssh") is None:
        raise InvalidRequest("--tunnel ssh needs the ssh client on this host: install "
                             "OpenSSH's client, or use --tunnel tcp")
    return str(value)


def ssh_options(profile: ClusterProfile) -> list[str]:
    """The profile's ``[kernel] ssh_options``: ssh's own arguments (``-F FILE``, ``-J``)."""
    options = profile.kernel.get("ssh_options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise InvalidRequest(f"[kernel] ssh_options in profile {profile.name!r} must be a "
                             f"list of strings, e.g. [\"-F\", \"~/.ssh/nodes\"]: not {options!r}")
    return [str(Path(o).expanduser()) if o.startswith("~") else o for o in options]


def free_local_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (bound there, never on all interfaces, then released)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for each in sockets:
            each.bind((LOCAL_ADDRESS, 0))
        return [each.getsockname()[1] for each in sockets]
    finally:
        for each in sockets:
            each.close()


@dataclass
class SshTunnel:
    """One ``ssh -N`` forwarding a kernel's ports from 127.0.0.1 to its node."""

    node: str
    remote: str  # the kernel's address, as the node sees it
    ports: Mapping[str, int]  # port name → the kernel's port
    options: Sequence[str]
    log: Path
    local: dict[str, int] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _folder: Path | None = None
    _said: str = ""  # what this ssh wrote to the log, read when it failed
    _log_from: int = 0  # the log's length when this ssh started

    def argv(self, control: Path) -> list[str]:
        forwards = [arg for name, port in self.ports.items() for arg in
                    ("-L", f"{LOCAL_ADDRESS}:{self.local[name]}:{self.remote}:{port}")]
        fixed = [arg for option in FIXED_OPTIONS for arg in ("-o", option)]
        return ["ssh", "-N", "-S", str(control), *fixed, *self.options, *forwards, "--",
                self.node]

    def open(self) -> SshTunnel:
        """Start ssh; returns once the forwards listen (ssh opens its control socket after
        binding them), else ``SubmissionError`` with ssh's own reason. A port taken between
        its choice and ssh's bind is chosen again; a reopened tunnel keeps its ports (the
        client's connection file names them)."""
        if not NODE_NAME.match(self.node):
            raise SubmissionError(f"the node's name {self.node!r} cannot be an ssh host")
        if self.local:
            return self._start()
        tries = 1
        while True:
            self.local = dict(zip(self.ports, free_local_ports(len(self.ports)), strict=True))
            try:
                return self._start()
            except SubmissionError:
                if tries == PORT_TRIES or not PORT_TAKEN.search(self._said):
                    raise
                tries += 1

    def _start(self) -> SshTunnel:
        self._remove_folder()  # a tunnel reopened after its ssh died: the old socket's
        # a private folder of a random name for the control socket (short: sockets' paths
        # are limited to ~100 characters)
        self._folder = Path(tempfile.mkdtemp(prefix="hm-ssh-"))
        control = self._folder / "control"
        self._log_from = self.log.stat().st_size if self.log.exists() else 0
        self._said = ""
        self.process = commands.start(self.argv(control), log=self.log)
        deadline = time.monotonic() + READY_WITHIN_S
        while not control.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                reason = self._reason() or (f"no answer within {READY_WITHIN_S:.0f}s"
                                            if self.process.poll() is None else "no output")
                self.close()
                raise SubmissionError(
                    f"the SSH tunnel to node {self.node} failed: {reason}: check that "
                    f"`ssh {self.node}` works from this host without a password (keys, "
                    "known_hosts), or use --tunnel tcp where the nodes' ports are open")
            time.sleep(0.1)
        return self

    def _reason(self) -> str:
        """This ssh's last line in the log (all it said is kept in ``_said``)."""
        try:
            with self.log.open("rb") as log:
                log.seek(self._log_from)
                self._said = log.read().decode(errors="replace")
        except OSError:
            return ""
        said = [line.strip() for line in self._said.splitlines() if line.strip()]
        return said[-1] if said else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client_info(self, info: Mapping[str, Any]) -> dict[str, Any]:
        """The kernel's connection info as the client here uses it: the local ports."""
        return {**info, "ip": LOCAL_ADDRESS, **self.local}

    def close(self) -> None:
        """End ssh (its group: SIGTERM, SIGKILL after a grace) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            commands.stop_group(self.process, CLOSED_WITHIN_S)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(CLOSED_WITHIN_S + 1)
        self._remove_folder()

    def _remove_folder(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def for_kernel(node: Mapping[str, Any], profile: ClusterProfile, log: Path) -> SshTunnel:
    """The tunnel for the kernel ``node.json`` describes (not yet open)."""
    connection = node["connection"]
    return SshTunnel(node=str(node.get("node") or node.get("host") or ""),
                     remote=str(connection["ip"]),
                     ports={name: int(connection[name]) for name in PORT_NAMES},
                     options=ssh_options(profile), log=log)
