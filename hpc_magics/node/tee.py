"""Copy the cell's stdout and stderr pipes to the job's logs, to ``output.txt`` and, as
records, to the live stream the notebook reads (``jobfolder/live_stream.py``), with the
displays the runner sends in order.

Its own process (``tee.py COPY STREAM STDOUT_FD STDERR_FD DISPLAY_FD ACK_FD``), not a
thread: a child the cell leaves running keeps copying through it after the cell, on file
descriptors the runner never reuses. Standard library only: it runs as a plain script.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
from types import ModuleType


def _live_stream() -> ModuleType:
    """``jobfolder/live_stream.py``, imported from its folder (this script runs without the
    package and ``site``; not ``importlib.util``: a third of this script's start)."""
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "jobfolder"))
    module: ModuleType = __import__("live_stream")
    return module


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # a log that is gone must not stop the copy into the other


class _Copier:
    """The pipes' bytes to where they go. A display record goes into the stream after what
    the cell printed before it (read out of the pipes first) and before what it prints
    after (the runner waits for the word on ``ack_fd``)."""

    def __init__(self, copy: int, stream: int, stdout_fd: int, stderr_fd: int,
                 display_fd: int, ack_fd: int) -> None:
        live_stream = _live_stream()
        self.record, self.parse_records = live_stream.record, live_stream.parse_records
        self.copy, self.stream, self.display_fd, self.ack_fd = copy, stream, display_fd, ack_fd
        # pipe → this process's own stdout/stderr (the log); the display pipe has none
        self.targets = {stdout_fd: 1, stderr_fd: 2, display_fd: -1}
        self.names = {stdout_fd: "stdout", stderr_fd: "stderr"}
        self.pending = b""  # the display pipe's bytes short of a whole record
        self.selector = selectors.DefaultSelector()
        for source in self.targets:
            os.set_blocking(source, False)  # a look that finds nothing does not wait
            self.selector.register(source, selectors.EVENT_READ)

    def run(self) -> None:
        while self.targets:
            for key, _ in self.selector.select():
                if key.fd in self.targets:
                    self.take(key.fd)

    def take(self, source: int) -> bool:
        """Copy what the pipe holds now; False when it held nothing (or has closed)."""
        try:
            chunk = os.read(source, 65536)
        except BlockingIOError:
            return False
        if not chunk:  # every writer has closed it
            self.selector.unregister(source)
            os.close(source)
            del self.targets[source]
            return False
        if source == self.display_fd:
            self.displays(chunk)
            return True
        _write_all(self.targets[source], chunk)
        _write_all(self.copy, chunk)
        _write_all(self.stream, self.record(self.names[source], chunk))
        return True

    def displays(self, chunk: bytes) -> None:
        self.pending += chunk
        records, used, damaged = self.parse_records(self.pending)
        if records:
            for source in list(self.names):
                while source in self.targets and self.take(source):
                    pass
            _write_all(self.stream, self.pending[:used])
            _write_all(self.ack_fd, b"\n" * len(records))
        self.pending = b"" if damaged else self.pending[used:]


def main(copy_path: str, stream_path: str, stdout_fd: int, stderr_fd: int,
         display_fd: int, ack_fd: int) -> None:
    # Slurm signals every process of the job step: the time-limit warning (USR2) and the
    # TERM before the kill are for the cell, which still has lines to say (its checkpoint)
    for name in ("SIGUSR1", "SIGUSR2", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    copy = os.open(copy_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    stream = os.open(stream_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _Copier(copy, stream, stdout_fd, stderr_fd, display_fd, ack_fd).run()
    os.close(ack_fd)
    os.close(copy)
    os.close(stream)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]))
