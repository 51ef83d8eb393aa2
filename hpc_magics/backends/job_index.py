"""Where each of the user's jobs keeps its folder, whichever notebook submitted it.

One JSON line per submission, appended to a private file in the user's Jupyter data dir,
so ``hpc_magics.job(ID)``, ``%hpc_fetch ID`` and ``%hpc_jobs --all`` find a job submitted
from another notebook (another folder) too. A folder that is gone, or is not the user's
own, is skipped: the folder itself stays the record.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..core.jobids import same_job
from .folder import JobFolder

INDEX_NAME = "hpc_magics-job-index.jsonl"
# only the newest entries are read: an index is never a reason for a slow look-up
READ_LAST = 5000


def index_path() -> Path:
    """``HPC_MAGICS_JOB_INDEX``, else a file in the user's Jupyter data dir."""
    override = os.environ.get("HPC_MAGICS_JOB_INDEX", "").strip()
    if override:
        return Path(override)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / INDEX_NAME


def record(job_id: str, cluster: str | None, folder: Path) -> None:
    """Remember a submission; never fails a submission (a read-only home just forgets)."""
    path = index_path()
    line = json.dumps({"job_id": job_id, "cluster": cluster,
                       "folder": str(folder.resolve())}) + "\n"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode())  # one short append: atomic enough
        finally:
            os.close(descriptor)


def entries() -> list[tuple[str, str]]:
    """(job id, folder) of the newest submissions, newest first."""
    try:
        lines = index_path().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in reversed(lines[-READ_LAST:]):
        try:
            entry = json.loads(line)
            found.append((str(entry["job_id"]), str(entry["folder"])))
        except (ValueError, KeyError, TypeError):
            continue
    return found


def folders_for(job_id: str, known: list[tuple[str, str]] | None = None) -> list[JobFolder]:
    """The user's own job folders the index names for ``job_id`` (or one of its tasks),
    newest submission first. ``known``: ``entries()`` read once for many look-ups."""
    found: list[JobFolder] = []
    seen: set[str] = set()
    for recorded, folder in entries() if known is None else known:
        if folder in seen or not (recorded == job_id or same_job(recorded, job_id)):
            continue
        seen.add(folder)
        path = Path(folder)
        try:
            owned = path.is_dir() and path.stat().st_uid == os.getuid()
        except OSError:
            owned = False
        if owned and (path / "meta.json").is_file():
            found.append(JobFolder(path))
    return found
