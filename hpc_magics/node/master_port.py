"""The port where the ranks of a multi-task cell meet (``MASTER_PORT``).

submitit derives it from the job id, and it may be taken on the first node. Rank 0 asks its
own host for a free port and writes it into the job folder; the other ranks wait for the
file. One file per job and segment: a requeued job meets anew.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from ..jobfolder.files import write_atomically

WAIT_S = 600.0  # rank 0 starts with the others (srun); a bound, not an expected wait


def port_file(folder: Path, job_id: str, segment: str) -> Path:
    return folder / f"master-port-{job_id}-{segment}.txt"


def free_port() -> int:
    """A port no one listens on here now (the kernel's pick among the free ones)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return int(probe.getsockname()[1])


def publish(path: Path) -> int:
    """Rank 0: a free port of this host, written where the other ranks read it."""
    port = free_port()
    write_atomically(path, f"{port}\n".encode())
    return port


def wait_for(path: Path, wait_s: float = WAIT_S) -> int:
    """Any other rank: rank 0's port, once written (polled with back-off)."""
    deadline = time.monotonic() + wait_s
    pause = 0.05
    while True:
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"rank 0 never wrote its port to {path} in {wait_s:.0f} s: "
                                   "did it start? (its log says)") from None
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
