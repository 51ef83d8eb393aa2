"""The user's shared cache files (the queue's and the accounting's views): one lock across
processes, and a private, atomic write that never ends the thread refreshing it."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path

from ..jobfolder.files import write_atomically
from ..jobfolder.lock import Lock


def shared_cache_path(folder: Path, kind: str, user: str, cluster: str) -> Path:
    """The user's shared ``kind`` cache (squeue, sacct) in ``folder``: per user and per
    cluster (one home seen from two clusters keeps two), names made file-safe."""

    def safe(text: str) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)

    return folder / f"hpc_magics-{kind}-{safe(user)}-{safe(cluster)}.json"


@contextlib.contextmanager
def file_lock(cache_path: Path, timeout: float) -> Iterator[bool]:
    """An exclusive lock on ``<cache>.lock`` (``jobfolder/lock.py``: flock, or its own lock
    file where the file system has none); yields False if not had within ``timeout``.
    Shared by the queue and the accounting caches."""
    lock = Lock(cache_path.with_suffix(".lock"))
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        had = lock.acquire(timeout, poll_s=0.02 + random.random() * 0.03)
    except OSError:
        yield True  # no runtime dir, or an unlockable one: answer without sharing
        return
    try:
        yield had
    finally:
        lock.release()


def write_private_json(path: Path, text: str) -> None:
    """Replace ``path`` atomically (readers never see half a file); failures are ignored
    (a cache that cannot be written must not end the thread that refreshes it)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(path, text)
