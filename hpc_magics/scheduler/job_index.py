"""The one index of the user's jobs: which folder holds which job, wherever it was submitted.

Every submission (``job_status.record_submission``) writes one small JSON file here, in the
user's Jupyter runtime directory: job id and cluster, folder, kind, submit time, and the
Jupyter server whose kernel submitted it (``HPC_MAGICS_SERVER_ID``). Each file is written
once, atomically, and never changed, so no lock is needed; its name carries the kind and the
job id, so a reader opens only the entries it wants. Entries older than ``KEEP_DAYS`` are
removed as the index is read; only the user's own regular files are read, never through a
symlink. Writing an entry never fails a submission.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.jobids import parse_job_id, same_job
from ..jobfolder.files import write_atomically
from ..jobfolder.folder import JobFolder, own_job_folder

SERVER_ID_ENV = "HPC_MAGICS_SERVER_ID"
FOLDER_NAME = "hpc-magics-submissions"
KEEP_DAYS = 14.0
KINDS = ("cell", "sweep", "notebook", "kernel")
KERNEL_KINDS = frozenset({"kernel"})
ENTRY_MAX_BYTES = 64 * 1024


def index_dir(base: Path | None = None) -> Path:
    if base is None:
        from .queue import default_cache_dir

        base = default_cache_dir()
    return base / FOLDER_NAME


def kind_of(meta: dict[str, Any]) -> str:
    """The kind of job a folder's meta.json describes."""
    kind = str(meta.get("kind") or "cell")
    return kind if kind in KINDS else "cell"


@dataclass(frozen=True)
class Entry:
    """One submission as the index knows it."""

    folder: Path
    job_id: str
    cluster: str | None
    submitted_at: float
    server_id: str | None
    name: str = ""
    kind: str = "cell"

    @property
    def local(self) -> bool:
        """A local-backend process, its id a pid: every Slurm submission records a cluster
        (``job_status.record_submission``), and a pid can equal a Slurm job's id."""
        return self.cluster is None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "folder": str(self.folder)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(**{**data, "folder": Path(data["folder"])})


def _id_part(job_id: str) -> str:
    """The job id as a file name part: its base id (an array task finds its array)."""
    parsed = parse_job_id(job_id)
    return "".join(c if c.isalnum() else "_" for c in (parsed.base if parsed else job_id))


def note(entry: Entry, base: Path | None = None) -> None:
    """Add one submission to the index (quietly does nothing where it cannot write)."""
    with contextlib.suppress(OSError):
        folder = index_dir(base)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _own_directory(folder):
            return
        name = f"{entry.kind}-{_id_part(entry.job_id)}-{secrets.token_hex(4)}.json"
        write_atomically(folder / name, json.dumps(entry.to_json()).encode())


def entries(base: Path | None = None, kinds: Collection[str] | None = None,
            job_ids: Collection[str] | None = None) -> list[Entry]:
    """The recent submissions, oldest first: of these ``kinds`` only, and of a job
    ``same_job`` matches with one of ``job_ids`` only, when given."""
    found = [entry for entry in map(_read, _chosen(base, kinds, job_ids))
             if entry is not None and (job_ids is None or any(
                 same_job(entry.job_id, job_id) for job_id in job_ids))]
    return sorted(found, key=lambda e: e.submitted_at)


def any_entry(kinds: Collection[str], base: Path | None = None) -> bool:
    """Whether the index holds a recent entry of these kinds (no entry is opened)."""
    return next(_chosen(base, kinds, None), None) is not None


def _chosen(base: Path | None, kinds: Collection[str] | None,
            job_ids: Collection[str] | None) -> Iterator[Path]:
    """The user's own entry files of these kinds and job ids, by their names alone;
    whatever is past ``KEEP_DAYS`` is removed on the way."""
    folder = index_dir(base)
    if not _own_directory(folder):
        return
    wanted_ids = None if job_ids is None else {_id_part(job_id) for job_id in job_ids}
    cutoff = time.time() - KEEP_DAYS * 86400.0
    uid = os.getuid()
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return
    for item in listing:
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_uid != uid:
            continue  # only ever the user's own index entries
        if info.st_mtime < cutoff:  # written at submission: its age is the entry's
            with contextlib.suppress(OSError):
                os.unlink(item.path)
            continue
        kind, _, rest = item.name.partition("-")
        if item.name.endswith(".json") and (kinds is None or kind in kinds) and \
                (wanted_ids is None or rest.rpartition("-")[0] in wanted_ids):
            yield Path(item.path)


def folders_for(job_id: str, known: list[Entry] | None = None,
                local: bool = False) -> list[JobFolder]:
    """The user's own job folders the index names for Slurm job ``job_id`` (or one of its
    tasks), newest submission first; with ``local``, for the local process of that pid
    instead (never both: the numbers overlap). ``known``: ``entries()`` read once for many
    look-ups."""
    chosen = entries(job_ids=[job_id]) if known is None else \
        [e for e in known if same_job(e.job_id, job_id)]
    return own_folders(reversed([e for e in chosen if e.local == local]))


def own_folders(chosen: Iterable[Entry]) -> list[JobFolder]:
    """The job folders of these entries that are still there, the user's own and hold a
    meta.json (never through a symlink), each once, in the entries' order."""
    found: dict[Path, JobFolder] = {}
    for entry in chosen:
        if entry.folder not in found and own_job_folder(entry.folder) is not None:
            found[entry.folder] = JobFolder(entry.folder)
    return list(found.values())


def _own_directory(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _read(path: Path) -> Entry | None:
    """One entry, read without following a symlink (``None`` when it is not one)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        data = json.loads(os.read(handle, ENTRY_MAX_BYTES))
        return Entry.from_json(data) if isinstance(data, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(handle)
