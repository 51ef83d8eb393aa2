"""A sweep's files in its job folder: the shared payload, the points, and one folder per
task (``tasks/NNNNN/``) with the runner's usual files plus ``task.json``, written last."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .files import write_atomically

PAYLOAD_FILE = "payload.pkl"
POINTS_FILE = "points.pkl"
TASKS_DIR = "tasks"
TASK_FILE = "task.json"


def task_dir(folder: Path, index: int) -> Path:
    return folder / TASKS_DIR / f"{index:05d}"


def write_task_info(target: Path, info: dict[str, Any]) -> None:
    """``task.json``, written last and whole (a unique temporary file, 0600, renamed)."""
    write_atomically(target / TASK_FILE, json.dumps(info).encode())



def task_outcome(folder: Path, meta: dict[str, Any], job_id: str) -> bool | None:
    """Did sweep task ``job_id`` (``123_4``) fail? ``None``: that attempt left no result.

    Read from its ``task.json`` (written after its results, with the attempt's id): a
    retried task's earlier attempt never answers for the retry, and nothing is unpickled.
    """
    array_id, _, position_text = job_id.partition("_")
    if not position_text.isdigit():
        return None
    position = int(position_text)
    for array in meta.get("sweep", {}).get("arrays", ()):
        if str(array.get("job_id")) != array_id:
            continue
        for start, stop in array.get("indices", ()):  # runs of point indices, in task order
            if position < stop - start:
                try:
                    info = json.loads((task_dir(folder, start + position) / TASK_FILE)
                                      .read_text())
                except (OSError, ValueError):
                    return None
                failed = info.get("failed")
                return bool(failed) if info.get("job_id") == job_id and failed is not None \
                    else None
            position -= stop - start
    return None
