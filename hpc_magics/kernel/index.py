"""Which kernel folders hold which job: so a listing reads only the folders of live jobs.

``%hpc_jobs`` asks one squeue view which of the user's jobs are alive; the folders of
those jobs are found here by job id (one small file per job id under the kernels root,
a folder name a line: an allocation may hold several kernels), never by reading every
kernel folder the user ever made. Folders from before this index are added once, by one
scan, the first time a listing needs the index. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

INDEX_DIR = ".by-job"  # no meta.json inside: never taken for a job folder
COMPLETE = ".complete"  # written after the one scan of older folders
META_FILE = "meta.json"  # as jobfolder.folder names it


def _entry(root: Path, job_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "._" else "_" for c in job_id)
    return root / INDEX_DIR / safe


def note(root: Path, job_id: str, folder: Path) -> None:
    """Record that ``folder`` (under ``root``) holds job ``job_id`` (quietly nothing where
    the index cannot be written: listings then miss that kernel, nothing else breaks)."""
    with contextlib.suppress(OSError):
        (root / INDEX_DIR).mkdir(mode=0o700, exist_ok=True)
        # one short line, appended: writers in several processes do not mix their lines
        handle = os.open(_entry(root, job_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(handle, f"{folder.name}\n".encode())
        finally:
            os.close(handle)


def _index_older_folders(root: Path) -> None:
    """Once: note every kernel folder made before the index existed."""
    marker = root / INDEX_DIR / COMPLETE
    if marker.exists() or not root.is_dir():
        return
    uid = os.getuid()
    for entry in os.scandir(root):
        with contextlib.suppress(OSError, ValueError):
            if entry.name == INDEX_DIR or not entry.is_dir(follow_symlinks=False) or \
                    entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            meta = json.loads((Path(entry.path) / META_FILE).read_text())
            if isinstance(meta, dict) and meta.get("kind") == "kernel" and meta.get("job_id"):
                note(root, str(meta["job_id"]), Path(entry.path))
    with contextlib.suppress(OSError):
        (root / INDEX_DIR).mkdir(mode=0o700, exist_ok=True)
        marker.touch(mode=0o600)


def any_kernel(root: Path) -> bool:
    """Whether this user ever had a kernel job under ``root`` (no squeue needed if not)."""
    _index_older_folders(root)
    try:
        with os.scandir(root / INDEX_DIR) as entries:
            return any(entry.name != COMPLETE for entry in entries)
    except OSError:
        return False


def folders_for(root: Path, job_ids: Iterable[str]) -> list[Path]:
    """The kernel folders of these jobs, each once, newest first as ``find_job_folders``
    lists them (none for other jobs)."""
    _index_older_folders(root)
    found: dict[Path, None] = {}
    uid = os.getuid()
    for job_id in job_ids:
        try:
            entry = _entry(root, job_id)
            if entry.stat().st_uid != uid:
                continue  # only ever the user's own index
            names = entry.read_text().split()
        except OSError:
            continue
        for name in names:
            if name not in (".", "..") and "/" not in name:
                found[root / name] = None
    dated = []
    for path in found:
        with contextlib.suppress(OSError):
            info = path.lstat()
            if info.st_uid == uid and os.path.isdir(path):
                dated.append((info.st_mtime, path))
    return [path for _, path in sorted(dated, reverse=True)]
