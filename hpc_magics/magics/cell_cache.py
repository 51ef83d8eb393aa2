"""``%%sbatch --cache``: a cell sent again unchanged returns the earlier job's result at
once, with no new job.

The key hashes the cell's translated code, its shipped inputs and the job's environment
(script without ``#SBATCH`` lines, backend, profile); resources are left out. The index,
``cell-cache.json`` in the private jobs root, is written whole under a lock; only a job whose
results are there and did not fail answers. Details: docs/how-it-works.md.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from ..jobfolder.files import write_atomically
from ..jobfolder.lock import Lock

INDEX_FILE = "cell-cache.json"
KEPT = 500  # entries; the oldest go first


def cache_key(payload: Any, script: str, folder: Path, backend: str, profile: str) -> str:
    environment = [line for line in script.replace(str(folder), "<job folder>").splitlines()
                   if not line.startswith("#SBATCH")]
    digest = hashlib.sha256()
    digest.update(json.dumps([payload.code, dict(sorted(payload.modules.items())),
                              list(payload.state_names), environment, backend, profile]
                             ).encode())
    digest.update(payload.state)
    for buffer in payload.buffers:  # big arrays kept apart from the pickle
        with buffer.raw() as view:
            digest.update(view)
    return digest.hexdigest()


def _read(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / INDEX_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_job(root: Path, key: str) -> dict[str, Any] | None:
    """The index entry of the job that answers for ``key`` (``job``, ``folder``, ``at``:
    when its results were written), or None."""
    from ..jobfolder.folder import JobFolder

    entry = _read(root).get(key)
    if not isinstance(entry, dict):
        return None
    name = str(entry.get("folder", ""))
    if not name or "/" in name:
        return None
    folder = JobFolder(root / name)
    outcome = folder.outcome()
    if outcome is None or outcome.failed or not folder.has_results():
        return None
    return {**entry, "at": folder.results_path.stat().st_mtime}


def remember(root: Path, key: str, job_id: str, folder: Path) -> None:
    with Lock(root / f".{INDEX_FILE}.lock"):
        index = _read(root)
        index[key] = {"job": job_id, "folder": folder.name, "submitted_at": time.time()}
        newest = sorted(index.items(), key=lambda item: item[1].get("submitted_at", 0))
        write_atomically(root / INDEX_FILE, json.dumps(dict(newest[-KEPT:]), indent=1))


def cached_message(entry: dict[str, Any]) -> str:
    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["at"]))
    return (f"[hpc_magics] cached: result of job {entry['job']} from {made} (same cell, "
            "inputs and environment; without --cache it runs again)")
