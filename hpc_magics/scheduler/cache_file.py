"""The user's shared cache files (the queue's and the accounting's views): one lock across
processes, and a private, atomic write that never ends the thread refreshing it."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import filelock

# flock refused by the file system (some NFS/Lustre mounts): lock with a lock file instead
NO_FLOCK_ERRNOS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})


def shared_cache_path(folder: Path, kind: str, user: str, cluster: str) -> Path:
    """The user's shared ``kind`` cache (squeue, sacct) in ``folder``: per user and per
    cluster (one home seen from two clusters keeps two), names made file-safe."""

    def safe(text: str) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)

    return folder / f"hpc_magics-{kind}-{safe(user)}-{safe(cluster)}.json"


@contextlib.contextmanager
def file_lock(cache_path: Path, timeout: float) -> Iterator[bool]:
    """An exclusive lock on ``<cache>.lock``; yields False if not had within ``timeout``.

    ``flock`` where the file system has it; where it refuses (ENOLCK, EOPNOTSUPP) a
    lock file (``<cache>.softlock``) does the same job. Shared by the queue and the
    accounting caches.
    """
    path = cache_path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        yield True  # no runtime dir: still answer, just without sharing
        return
    lock: filelock.BaseFileLock = (
        filelock.SoftFileLock(path.with_suffix(".softlock"), timeout=timeout)
        if _soft_locks_only else filelock.FileLock(path, timeout=timeout))
    try:
        lock.acquire(poll_interval=0.02 + random.random() * 0.03)
    except filelock.Timeout:
        yield False
        return
    except OSError as error:
        if error.errno not in NO_FLOCK_ERRNOS or _soft_locks_only:
            yield True  # an unlockable runtime dir: answer without sharing
            return
        _use_soft_locks()
        with file_lock(cache_path, timeout) as locked:
            yield locked
        return
    try:
        yield True
    finally:
        lock.release()


def write_private_json(path: Path, text: str) -> None:
    """Replace ``path`` atomically (readers never see half a file); failures are ignored
    (a cache that cannot be written must not end the thread that refreshes it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


_soft_locks_only = False


def _use_soft_locks() -> None:
    """Remember for this process that flock does not work where the cache lives."""
    global _soft_locks_only
    _soft_locks_only = True
