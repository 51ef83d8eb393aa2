"""An sshd of the test user on 127.0.0.1, standing in for the compute nodes' sshd.

The test cluster's nodes share this host, so "ssh c1" reaching this sshd is ssh reaching
the node the kernel runs on. It runs as whoever runs the tests (sshd runs unprivileged
for its own user: no PAM, no privilege separation), with a host key and an authorized key
made for the test, all in a private temporary folder; an ssh_config maps the nodes' names
to it, as a user's ~/.ssh/config maps a site's nodes.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from server.conftest import port_to_hand_on

SBIN = os.pathsep.join(("/usr/sbin", "/sbin"))  # not on an ordinary user's PATH
UP_WITHIN_S = 20.0


@dataclass(frozen=True)
class Sshd:
    port: int
    ssh_config: Path  # Host c1 c2 → this sshd, with the test's key and known_hosts
    process: subprocess.Popen[bytes]


def sshd_program() -> str | None:
    return shutil.which("sshd", path=os.pathsep.join((os.environ.get("PATH", ""), SBIN)))


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, timeout=30, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()


@contextmanager
def running_sshd(folder: Path, nodes: tuple[str, ...]) -> Iterator[Sshd]:
    program = sshd_program()
    assert program is not None
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    host_key = keygen(folder / "host_key")
    user_key = keygen(folder / "user_key")
    (folder / "authorized_keys").write_text(user_key + "\n")
    port = port_to_hand_on()
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nAllowTcpForwarding local\n"
        "X11Forwarding no\nPermitTTY no\n")
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n")
    (folder / "ssh_config").write_text(
        f"Host {' '.join(nodes)}\n  HostName 127.0.0.1\n  Port {port}\n"
        f"  User {getpass.getuser()}\n  IdentityFile {folder / 'user_key'}\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {folder / 'known_hosts'}\n"
        "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n")
    if os.geteuid() == 0:  # sshd run by root insists on its privilege separation folder
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = open(folder / "sshd.log", "ab")
    # sshd re-executes itself: it wants its absolute path
    process = subprocess.Popen([program, "-D", "-e", "-f", str(folder / "sshd_config")],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + UP_WITHIN_S
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()}")
            time.sleep(0.1)
        yield Sshd(port, folder / "ssh_config", process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
