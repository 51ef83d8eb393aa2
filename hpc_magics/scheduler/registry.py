"""The user's index of submitted job folders, so the Jupyter server knows them all.

Job folders live beside each notebook (``hpc_jobs/``), wherever the kernel ran. Every
submission (``record_submission``) also drops one small JSON file here, in the user's
Jupyter runtime directory (private to the user, shared by the server and its kernels):
the folder's path, the job id and cluster, when it was submitted, and the id of the
Jupyter server whose kernel submitted it (``HPC_MAGICS_SERVER_ID``, set by the server
extension for its kernels). The server reads this index to notice jobs ending and to
list, when it is asked to stop, the jobs it started. Entries older than
``KEEP_DAYS`` are removed when read. Writing an entry never fails a submission.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..jobfolder.files import write_atomically

SERVER_ID_ENV = "HPC_MAGICS_SERVER_ID"
FOLDER_NAME = "hpc-magics-submissions"
KEEP_DAYS = 7.0


def current_server_id() -> str | None:
    """The id of the Jupyter server whose kernel this process is (``None`` elsewhere)."""
    return os.environ.get(SERVER_ID_ENV) or None


def registry_dir(base: Path | None = None) -> Path:
    if base is None:
        from .queue import default_cache_dir

        base = default_cache_dir()
    return base / FOLDER_NAME


@dataclass(frozen=True)
class Entry:
    """One submission as the index knows it."""

    folder: Path
    job_id: str
    cluster: str | None
    submitted_at: float
    server_id: str | None
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "job_id": self.job_id, "cluster": self.cluster,
                "submitted_at": self.submitted_at, "server_id": self.server_id,
                "name": self.name}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(Path(str(data["folder"])), str(data["job_id"]), data.get("cluster"),
                   float(data["submitted_at"]), data.get("server_id"),
                   str(data.get("name") or ""))


def note(entry: Entry, base: Path | None = None) -> None:
    """Add one submission to the index (quietly does nothing where it cannot write)."""
    with contextlib.suppress(OSError):
        folder = registry_dir(base)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        safe_id = "".join(c if c.isalnum() else "_" for c in entry.job_id)
        write_atomically(folder / f"{safe_id}-{secrets.token_hex(4)}.json",
                         json.dumps(entry.to_json()))


def entries(base: Path | None = None, keep_days: float = KEEP_DAYS) -> list[Entry]:
    """Every recent submission, oldest first; entries past ``keep_days`` are removed."""
    folder = registry_dir(base)
    found: list[Entry] = []
    cutoff = time.time() - keep_days * 86400.0
    try:
        paths = list(folder.glob("*.json"))
    except OSError:
        return []
    uid = os.getuid()
    for path in paths:
        try:
            if path.stat().st_uid != uid:
                continue  # only ever the user's own index entries
            entry = Entry.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if entry.submitted_at < cutoff:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        found.append(entry)
    found.sort(key=lambda e: e.submitted_at)
    return found
