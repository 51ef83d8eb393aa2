"""``%%sbatch --cache``: a cell sent again unchanged returns the earlier job's result at
once, with no new job.

Unchanged means the same key, a hash of:
- the cell's code (after its magics are translated);
- its shipped inputs: the payload's pickle and its big buffers, hashed whole, and the
  modules it imports by name;
- the job's environment: the job script without its ``#SBATCH`` lines and its folder's
  path (what remains is the interpreter, the module, venv and set-up lines), the backend
  and the profile. The resources (time, memory, CPUs, GPUs, partition) are left out: they
  decide where and how fast a cell runs, not what it computes. A cell whose result depends
  on them (a GPU model's numerics, a thread count) should not use ``--cache``.

The index (``cell-cache.json`` in the user's private jobs root, written whole under a lock)
maps each key to the job that made it. A job whose results are there and did not fail
answers; one still running, failed or deleted does not, and the cell runs again.
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
