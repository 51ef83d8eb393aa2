"""The one lock between processes: ``flock`` on a lock file, or a lock file of our own
where the file system has no ``flock`` (around a job folder's ``meta.json`` update and the
user's shared queue and accounting caches).

Where ``flock`` fails with ENOSYS, ENOLCK or EOPNOTSUPP (Lustre ``-o noflock``, some NFS),
the lock is a second file, ``<lock>.held``, created exclusively and removed on release. It
names its holder (host, pid, start time): a holder that died is taken over, on this host
when that process is gone, from another host once the file is ``FOREIGN_STALE_S`` old.
Nothing is printed: every process on one mount gets the same answer, so all lock alike.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import time
import types
from pathlib import Path

# flock refused by the file system itself (not a lock held by someone else)
NO_FLOCK_ERRNOS = frozenset({errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP})
HELD_ERRNOS = frozenset({errno.EAGAIN, errno.EACCES})  # held: some file systems say EACCES
HELD_SUFFIX = ".held"
FOREIGN_STALE_S = 300.0  # a holder on another host cannot be asked: its file's age decides
POLL_S = 0.02


class Lock:
    """An exclusive lock on ``path``, for ``with`` or ``acquire(timeout)`` / ``release()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None  # the flocked lock file
        self._held: Path | None = None  # our own lock file (no flock here)

    def acquire(self, timeout: float | None = None, poll_s: float = POLL_S) -> bool:
        """Wait for the lock (``timeout`` seconds at most; None: as long as it takes): True
        once held. Raises ``OSError`` for a lock file that cannot be made."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._try():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
        if self._held is not None:
            with contextlib.suppress(FileNotFoundError):
                self._held.unlink()
            self._held = None

    @property
    def mode(self) -> str | None:
        """How it is held: ``"flock"``, ``"lock file"``, or None (for the doctor)."""
        if self._fd is not None:
            return "flock"
        return "lock file" if self._held is not None else None

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: types.TracebackType | None) -> None:
        self.release()

    def _try(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            flock(fd)
        except OSError as error:
            os.close(fd)
            if error.errno in HELD_ERRNOS:
                return False  # held by another process
            if error.errno not in NO_FLOCK_ERRNOS:
                raise
            return self._try_held_file()
        self._fd = fd
        return True

    def _try_held_file(self) -> bool:
        held = self.path.with_name(self.path.name + HELD_SUFFIX)
        try:
            fd = os.open(held, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            _remove_if_stale(held)
            return False  # the next try may find it gone
        with os.fdopen(fd, "w") as stream:
            stream.write(json.dumps(_holder(os.getpid())))
        self._held = held
        return True


def flock(fd: int) -> None:
    """``flock(fd, LOCK_EX | LOCK_NB)``: a name of its own, for a test to stand in."""
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _holder(pid: int) -> dict[str, object]:
    import psutil  # only where flock is missing

    try:
        started = psutil.Process(pid).create_time()
    except psutil.Error:
        started = None
    return {"host": socket.gethostname(), "pid": pid, "started": started}


def _remove_if_stale(held: Path) -> None:
    """Remove a lock file whose holder is gone, one waiter at a time (``.break``, made
    exclusively): two waiters never both take over, nor remove the next holder's file."""
    breaker = held.with_name(held.name + ".break")
    try:
        fd = os.open(breaker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        with contextlib.suppress(FileNotFoundError):
            if time.time() - os.stat(breaker).st_mtime > FOREIGN_STALE_S:
                breaker.unlink()
        return
    try:
        if _is_stale(held):
            held.unlink()
    except FileNotFoundError:
        pass  # released meanwhile
    finally:
        os.close(fd)
        breaker.unlink()


def _is_stale(held: Path) -> bool:
    with held.open() as stream:
        text = stream.read()
        age = time.time() - os.fstat(stream.fileno()).st_mtime
    try:
        owner = json.loads(text)
        host, pid, started = owner["host"], int(owner["pid"]), owner["started"]
    except (ValueError, KeyError, TypeError):  # being written, or its writer died doing so
        return age > FOREIGN_STALE_S
    if host != socket.gethostname() or started is None:
        return age > FOREIGN_STALE_S  # a holder that cannot be asked
    return _holder(pid)["started"] != started  # gone, or its pid reused since
