"""Big arrays travel beside the pickle, as raw files in the job folder the job maps back.

``pack`` keeps big contiguous buffers out of the one pickle (pickle protocol 5). At
submission ``write_buffers`` writes each as ``buffers/N.bin`` in the job folder: one plain
write, no pickling copy, so shipping costs what ``np.save`` costs. Shipping the same data
again costs a comparison, not a write: every buffer written is also linked into a per-user
cache beside the job folders (``.shipped-UID``), keyed by its size and a hash of sampled
pages; a buffer whose key is there and whose bytes are the same (compared in full) becomes
a hard link to that file. Files are never changed in place, so a running job's data never
changes under it.

On the node ``open_buffers`` maps the files copy-on-write: arrays are writable (the cell
may change them in place), pages are read only when touched, and the file never changes.
Imported on the compute node: standard library only.
"""

from __future__ import annotations

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
from .packing import Payload

BUFFERS_DIR = "buffers"
SAMPLES = 64  # pages hashed for the cache key: enough to tell data sets apart cheaply
SAMPLE_BYTES = 4096
COMPARE_CHUNK = 64 << 20
CACHE_KEEP = 16  # newest cached buffers kept per user


def cache_dir(jobs_root: Path) -> Path:
    return jobs_root / f".shipped-{os.getuid()}"


def write_buffers(payload: Payload, folder: Path) -> Payload:
    """Write the payload's out-of-band buffers into ``folder``; the payload to submit
    (it names the files by absolute path and holds no buffer: it pickles with any
    protocol)."""
    if not payload.buffers:
        return payload
    target = folder / BUFFERS_DIR
    target.mkdir(mode=0o700)
    cache = cache_dir(folder.parent)
    try:
        cache.mkdir(mode=0o700, exist_ok=True)
        usable_cache = _owned_private(cache)
    except OSError:
        usable_cache = False
    names = []
    for index, buffer in enumerate(payload.buffers):
        path = target / f"{index}.bin"
        with buffer.raw() as view:
            key = _key(view)
            cached = cache / f"{key}.bin"
            if not (usable_cache and same_bytes(view, cached) and _link(cached, path)):
                _write(path, view)
                if usable_cache:
                    _remember(path, cached)
        names.append(str(path.absolute()))  # a sweep's tasks run in folders below
    if usable_cache:
        _prune(cache)
    return replace(payload, buffers=(), buffer_files=tuple(names))


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


def same_bytes(view: memoryview, path: Path) -> bool:
    """Does the file hold exactly these bytes? Compared with numpy (loaded already when a
    buffer this big exists); without it the cache is not used."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    try:
        info = path.stat()
    except OSError:
        return False
    if info.st_size != view.nbytes or info.st_uid != os.getuid():
        return False
    kind = numpy.uint64 if view.nbytes % 8 == 0 else numpy.uint8
    ours = numpy.frombuffer(view, dtype=kind)
    theirs = numpy.memmap(path, dtype=kind, mode="r")
    step = COMPARE_CHUNK // numpy.dtype(kind).itemsize
    try:
        return all(numpy.array_equal(ours[i:i + step], theirs[i:i + step])
                   for i in range(0, len(ours), step))
    finally:
        del theirs


def _link(source: Path, path: Path) -> bool:
    try:
        os.link(source, path)
    except OSError:  # another file system, or links not allowed: write it instead
        return False
    return True


def _write(path: Path, view: memoryview) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(view)


def _remember(path: Path, cached: Path) -> None:
    """Make ``cached`` the file just written (a new link: the old file stays as it was)."""
    temporary = cached.with_name(f".{secrets.token_hex(4)}.tmp")
    try:
        os.link(path, temporary)
        os.replace(temporary, cached)
    except OSError:
        temporary.unlink(missing_ok=True)


def _prune(cache: Path) -> None:
    try:
        entries = sorted(cache.glob("*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[CACHE_KEEP:]:
            old.unlink(missing_ok=True)  # job folders keep their own links
    except OSError:
        pass


def _owned_private(folder: Path) -> bool:
    info = folder.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
