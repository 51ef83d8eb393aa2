"""Copy the cell's stdout and stderr pipes to the job's logs and to ``output.txt``.

Run as its own process (``python tee.py COPY_PATH STDOUT_FD STDERR_FD``), not as a thread of
the runner: a child the cell leaves running (``!cmd &``, DataLoader workers) keeps the pipes
open after the cell, and this process keeps copying its output until the last writer is
gone, with file descriptors the runner can never close or reuse for its results file.
Standard library only: it runs as a plain script.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # a log that is gone must not stop the copy into the other


def main(copy_path: str, stdout_fd: int, stderr_fd: int) -> None:
    # Slurm signals every process of the job step: the time-limit warning (USR2) and the
    # TERM before the kill are for the cell, which still has lines to say (its checkpoint)
    for name in ("SIGUSR1", "SIGUSR2", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    targets = {stdout_fd: 1, stderr_fd: 2}  # pipe → this process's own stdout/stderr (the log)
    selector = selectors.DefaultSelector()
    for source in targets:
        selector.register(source, selectors.EVENT_READ)
    copy = os.open(copy_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    while targets:
        for key, _ in selector.select():
            source = key.fd
            chunk = os.read(source, 65536)
            if not chunk:  # every writer has closed it
                selector.unregister(source)
                os.close(source)
                del targets[source]
                continue
            _write_all(targets[source], chunk)
            _write_all(copy, chunk)
    os.close(copy)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
