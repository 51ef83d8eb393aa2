"""Copy the cell's stdout and stderr pipes to the job's logs, to ``output.txt`` and, as
records that keep which stream said what, to the live stream the notebook reads while the
job runs (``jobfolder/live_stream.py``).

Run as its own process (``python tee.py COPY_PATH STREAM_PATH STDOUT_FD STDERR_FD``), not as
a thread of the runner: a child the cell leaves running (``!cmd &``, DataLoader workers)
keeps the pipes open after the cell, and this process keeps copying its output until the
last writer is gone, with file descriptors the runner can never close or reuse for its
results file.
Standard library only: it runs as a plain script.
"""

from __future__ import annotations

import importlib.util
import os
import selectors
import signal
import sys
from types import ModuleType


def _live_stream() -> ModuleType:
    """``jobfolder/live_stream.py`` by its path: this script runs without the package."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "jobfolder", "live_stream.py")
    spec = importlib.util.spec_from_file_location("hpc_magics_live_stream", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # a log that is gone must not stop the copy into the other


def main(copy_path: str, stream_path: str, stdout_fd: int, stderr_fd: int) -> None:
    # Slurm signals every process of the job step: the time-limit warning (USR2) and the
    # TERM before the kill are for the cell, which still has lines to say (its checkpoint)
    for name in ("SIGUSR1", "SIGUSR2", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    targets = {stdout_fd: 1, stderr_fd: 2}  # pipe → this process's own stdout/stderr (the log)
    selector = selectors.DefaultSelector()
    for source in targets:
        selector.register(source, selectors.EVENT_READ)
    copy = os.open(copy_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    stream = os.open(stream_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    record = _live_stream().record
    names = {stdout_fd: "stdout", stderr_fd: "stderr"}
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
            _write_all(stream, record(names[source], chunk))
    os.close(copy)
    os.close(stream)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
