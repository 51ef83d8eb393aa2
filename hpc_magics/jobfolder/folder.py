"""A job's folder: everything a job needs and leaves behind, private to the user.

Layout: ``job.py`` (the cell), ``job.sh`` (the exact script submitted), ``meta.json`` (id,
backend, request, what was shipped), submitit's pickles and logs, ``output.txt``,
``results.pkl``, ``outcome.json`` (written after the results) and ``figures/``.

Each job folder is private (0700). The jobs root is private too, unless made inside a
project folder (group-writable, not world-writable): then it is shared with that folder's
group (3770: setgid keeps the group, sticky stops members removing each other's folders).
Only the user's own job folders are ever listed or loaded.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.users import user_name
from .files import (
    OUTCOME_FILE,
    RESULTS_FILE,
    CellResult,
    Outcome,
    check_owned,
    load_own,
    read_outcome,
    write_atomically,
)
from .lock import Lock

META_FILE = "meta.json"
META_LOCK = ".meta.json.lock"  # one lock per job folder, around every read-modify-write
META_READ_TRIES, META_RETRY_S = 20, 0.01


PRIVATE = 0o700
WOULD_BE_STAMP, WOULD_BE_TOKEN = "YYYYMMDD-HHMMSS", "XXXX"
# setgid: new entries get the folder's group; sticky: only an entry's owner may remove it
SHARED_JOBS_ROOT = stat.S_ISGID | stat.S_ISVTX | 0o770


def ensure_jobs_root(root: Path) -> Path:
    """The folder job folders go in, created private or, in a project folder, group-shared.
    One of ours loses any access for others (not its group's); one of another user's
    must let us create folders in it."""
    if not root.exists():
        parent = root.parent
        parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE)
        above = parent.stat()  # a project folder: group-writable, not /tmp
        shared = bool(above.st_mode & stat.S_IWGRP) and not above.st_mode & stat.S_IWOTH
        try:
            root.mkdir(mode=PRIVATE)
        except FileExistsError:
            pass  # a group member made it just now
        else:
            if shared and root.stat().st_gid != above.st_gid:  # parent not setgid: its group
                os.chown(root, -1, above.st_gid)
            root.chmod(SHARED_JOBS_ROOT if shared else PRIVATE)
            return root
    info = root.stat()
    if info.st_uid == os.getuid():
        if info.st_mode & stat.S_IRWXO:
            root.chmod(stat.S_IMODE(info.st_mode) & ~stat.S_IRWXO)
        return root
    if not os.access(root, os.W_OK | os.X_OK):
        raise HpcMagicsError(
            f"jobs folder {root} belongs to {user_name(info.st_uid)} and you may not create "
            f"job folders in it: ask them to `chmod 3770 {root}` (group "
            f"{user_name(info.st_gid, group=True)}), or set HPC_MAGICS_JOBS_DIR to a folder of "
            "yours")
    return root


@dataclass(frozen=True)
class JobFolder:
    path: Path

    @classmethod
    def create(cls, root: Path, name: str, need_bytes: int = 0) -> JobFolder:
        """A new job folder under ``root``, which must have ``need_bytes`` free."""
        _check_path_text(root)
        check_free_space(root, need_bytes)
        ensure_jobs_root(root)
        path = root / _folder_name(name, time.strftime("%Y%m%d-%H%M%S"), secrets.token_hex(2))
        path.mkdir(mode=PRIVATE)
        path.chmod(PRIVATE)
        return cls(path)

    @staticmethod
    def would_be(root: Path, name: str) -> Path:
        """Where ``create`` would put the folder, stamp and random part spelled out (dry run)."""
        _check_path_text(root)
        return root / _folder_name(name, WOULD_BE_STAMP, WOULD_BE_TOKEN)

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Replace ``meta.json`` whole (atomically: readers see the old or the new file)."""
        write_atomically(self.path / META_FILE, json.dumps(meta, indent=2, sort_keys=True))

    def meta(self, strict: bool = False) -> dict[str, Any]:
        """``meta.json``, or ``{}`` when there is none yet. A file that does not parse is
        read again (a writer on a file system without atomic rename); one that stays
        damaged is ``{}`` to a reader and an error to a writer (``strict``)."""
        path = self.path / META_FILE
        for attempt in range(META_READ_TRIES):
            try:
                data = json.loads(path.read_text())
                return data if isinstance(data, dict) else {}
            except FileNotFoundError:
                return {}
            except (OSError, ValueError) as error:
                if attempt < META_READ_TRIES - 1:
                    time.sleep(META_RETRY_S)
                elif strict:
                    raise damaged(path, error) from None
        return {}

    def update_meta(self, **changes: Any) -> None:
        """Read, change and write ``meta.json`` under the folder's lock: no change is lost."""
        with Lock(self.path / META_LOCK):
            meta = self.meta(strict=True)
            meta.update(changes)
            self.write_meta(meta)

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    def has_results(self) -> bool:
        """Are the results whole and visible (their outcome file is written after them)?"""
        return (self.path / OUTCOME_FILE).exists() and self.results_path.exists()

    def outcome(self) -> Outcome | None:
        """How the cell ended, unpickling nothing; ``None`` before its results are whole."""
        return read_outcome(self.path)

    def load_results(self) -> CellResult:
        check_owned(self.path)
        try:
            result = load_own(self.results_path)
        except (OSError, HpcMagicsError):
            raise
        except Exception as error:  # our own file, damaged: truncated, overwritten
            raise damaged(self.results_path, error) from None
        if not isinstance(result, CellResult):
            raise HpcMagicsError(f"{self.results_path} is not an hpc_magics result file")
        return result


def damaged(path: Path, error: BaseException) -> HpcMagicsError:
    """The one line for a result file that does not load."""
    why = str(error).splitlines()[0] if str(error) else type(error).__name__
    return HpcMagicsError(f"{path} is damaged ({type(error).__name__}: {why}; truncated or "
                          "overwritten?): the cell's output is in output.txt beside it; run "
                          "the cell again for its results")


def check_free_space(root: Path, need_bytes: int) -> None:
    """Refuse a jobs folder on a file system that cannot take the job (full, read-only), not
    a job that cannot write its results after hours in the queue."""
    probe = root
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        info = os.statvfs(probe)
    except OSError:
        return  # cannot tell: creating the folder will say
    if info.f_flag & os.ST_RDONLY:
        raise HpcMagicsError(f"the jobs folder {root} is on a read-only file system: set "
                             "HPC_MAGICS_JOBS_DIR to a writable folder")
    free = info.f_bavail * info.f_frsize
    if free < need_bytes:
        raise HpcMagicsError(
            f"the jobs folder {root} has {free / 1e6:.2f} MB free, the job needs about "
            f"{need_bytes / 1e6:.2f} MB: free some space, or set HPC_MAGICS_JOBS_DIR to a "
            "folder with room")


def _check_path_text(root: Path) -> None:
    """#SBATCH lines end at a line break: a path with one cannot be given to sbatch."""
    if "\n" in str(root) or "\r" in str(root):
        raise HpcMagicsError(f"the jobs folder {str(root)!r} has a line break in its name, "
                             "which sbatch cannot take: set HPC_MAGICS_JOBS_DIR (or "
                             "c.HpcMagicsKernel.jobs_dir) to a folder without one")


def _folder_name(name: str, stamp: str, token: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "job"
    return f"{safe}-{stamp}-{token}"


def find_job_folders(root: Path) -> Iterator[JobFolder]:
    """The user's own job folders under ``root``, newest first (others' are skipped)."""
    if not root.is_dir():
        return
    found = [(info.st_mtime, path) for path in root.iterdir()
             if (info := own_job_folder(path)) is not None]
    for _, path in sorted(found, key=lambda item: item[0], reverse=True):
        yield JobFolder(path)


def own_job_folder(path: Path) -> os.stat_result | None:
    """``path``'s own ``lstat`` when it is a folder of this user's with a ``meta.json``,
    neither through a symlink (``None`` otherwise, or when it vanished)."""
    try:
        info, meta = path.lstat(), (path / META_FILE).lstat()
    except OSError:
        return None
    own = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
    return info if own and stat.S_ISREG(meta.st_mode) else None
