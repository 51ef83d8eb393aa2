"""Big arrays travel beside the pickle, as raw files in the job folder the job maps back.

At submission ``write_buffers`` writes each out-of-band buffer as ``buffers/N.bin``: one
plain write, as ``np.save`` costs. The same data again costs a comparison: each file is
also linked into a per-user cache beside the job folders (``.shipped-UID``), keyed by size
and sampled pages, and a buffer with the same bytes becomes a hard link to it. Files are
never changed in place. On the node ``open_buffers`` maps them copy-on-write.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import secrets
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.errors import ShippingError
from ..jobfolder.files import move_into_place
from .packing import Payload

BUFFERS_DIR = "buffers"
SAMPLES = 64  # pages hashed for the cache key: enough to tell data sets apart cheaply
SAMPLE_BYTES = 4096
COMPARE_CHUNK = 64 << 20
CACHE_KEEP = 16  # newest cached buffers kept per user


def cache_dir(jobs_root: Path) -> Path:
    return jobs_root / f".shipped-{os.getuid()}"


def write_buffers(payload: Payload, folder: Path) -> Payload:
    """Write the out-of-band buffers into ``folder``; the payload then names their files."""
    if not payload.buffers:
        return payload
    target = folder / BUFFERS_DIR
    target.mkdir(mode=0o700)
    cache = _open_cache(cache_dir(folder.parent))
    names = []
    try:
        for index, buffer in enumerate(payload.buffers):
            path = target / f"{index}.bin"
            with buffer.raw() as view:
                cached = f"{_key(view)}.bin"
                if not (cache is not None and same_bytes(view, cached, cache)
                        and _link(cached, path, cache)):
                    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                                   "wb") as stream:
                        stream.write(view)
                    if cache is not None:
                        _remember(path, cached, cache)
            names.append(str(path.absolute()))  # a sweep's tasks run in folders below
        if cache is not None:
            _prune(cache)
    finally:
        if cache is not None:
            os.close(cache)
    return replace(payload, buffers=(), buffer_files=tuple(names))


def unpack(payload: Payload, folder: Path | None) -> dict[str, Any]:
    """The shipped names as the job gets them: modules imported, values unpickled from the
    one pickle and the buffer files (which imports their classes' modules too)."""
    import importlib

    from .stream import load_names

    values = {name: importlib.import_module(module) for name, module in payload.modules.items()}
    values.update(load_names(payload.state, payload.state_names, open_buffers(payload, folder)))
    return values


def open_buffers(payload: Payload, folder: Path | None) -> list[Any]:
    """The payload's buffers for ``load_names``: the files ``write_buffers`` wrote, mapped
    copy-on-write, or the buffers themselves when they were never written (tests)."""
    if not payload.buffer_files:
        return list(payload.buffers)
    opened = []
    for name in payload.buffer_files:
        path = Path(name) if folder is None else folder / name  # absolute names stay
        with path.open("rb") as stream:
            info = os.fstat(stream.fileno())
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise ShippingError(f"{path} is not yours alone: refusing to load it")
            opened.append(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_COPY))
    return opened


def _key(view: memoryview) -> str:
    """Size and a hash of evenly spread pages: cheap, and a candidate only (compared next)."""
    digest = hashlib.sha1(usedforsecurity=False)
    size = view.nbytes
    step = max(size // SAMPLES, 1)
    for start in range(0, size, step):
        digest.update(view[start:start + SAMPLE_BYTES])
    digest.update(view[max(size - SAMPLE_BYTES, 0):])
    return f"{size}-{digest.hexdigest()[:24]}"


def _open_cache(path: Path) -> int | None:
    """The user's cache folder, open (made if missing), or ``None`` when it is not a
    private folder of theirs. The jobs root may be shared: a link is never followed, and
    every later step works inside the folder opened here (``dir_fd``)."""
    with contextlib.suppress(OSError):  # there already, or cannot be: said next
        os.mkdir(path, 0o700)
    try:
        cache = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # a link (ELOOP), a file, or none
        return None
    info = os.fstat(cache)
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        os.close(cache)
        return None
    return cache


def same_bytes(view: memoryview, name: str | Path, folder: int | None = None) -> bool:
    """Is the file ``name`` (inside the open ``folder``, when given) a file of ours holding
    exactly these bytes? Compared with numpy (loaded when such a buffer exists), else no."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size != view.nbytes \
                or info.st_uid != os.getuid():
            return False
        kind = numpy.uint64 if view.nbytes % 8 == 0 else numpy.uint8
        ours = numpy.frombuffer(view, dtype=kind)
        theirs = numpy.memmap(stream, dtype=kind, mode="r")
        step = COMPARE_CHUNK // numpy.dtype(kind).itemsize
        try:
            return all(numpy.array_equal(ours[i:i + step], theirs[i:i + step])
                       for i in range(0, len(ours), step))
        finally:
            del theirs


def _link(name: str, path: Path, cache: int) -> bool:
    try:
        os.link(name, path, src_dir_fd=cache, follow_symlinks=False)
    except OSError:  # another file system, or links not allowed: write it instead
        return False
    return True


def _remember(path: Path, name: str, cache: int) -> None:
    """Make the cache's ``name`` the file just written (a new link; the old file stays)."""
    temporary = f".{secrets.token_hex(8)}.tmp"
    try:
        os.link(path, temporary, dst_dir_fd=cache, follow_symlinks=False)
        move_into_place(temporary, name, dir_fd=cache)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=cache)


def _prune(cache: int) -> None:
    """Keep the ``CACHE_KEEP`` newest files (job folders keep their own links)."""
    with contextlib.suppress(OSError):
        with os.scandir(cache) as entries:
            found = [(entry.stat(follow_symlinks=False).st_mtime, entry.name)
                     for entry in entries if entry.name.endswith(".bin")]
        for _, name in sorted(found, reverse=True)[CACHE_KEEP:]:
            os.unlink(name, dir_fd=cache)
