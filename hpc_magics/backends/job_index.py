"""Where each of the user's jobs keeps its folder, whichever notebook submitted it.

Read from the submission index (``scheduler/registry.py``, one per user, also what the server
reads), so ``hpc_magics.job(ID)``, ``%hpc_fetch ID`` and ``%hpc_jobs --all`` find a job
submitted from another notebook (another folder) too. A folder that is gone, or is not the user's
own, is skipped: the folder itself stays the record.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.jobids import same_job
from ..jobfolder.folder import JobFolder


def entries() -> list[tuple[str, str]]:
    """(job id, folder) of the recent submissions, newest first, from the one submission
    index every ``record_submission`` writes (``scheduler/registry.py``)."""
    from ..scheduler import registry

    return [(entry.job_id, str(entry.folder)) for entry in reversed(registry.entries())]


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
