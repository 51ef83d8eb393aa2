"""A sweep's files in its job folder: the shared payload, the points, and one folder per
task (``tasks/NNNNN/``) with the runner's usual files (``outcome.json`` last)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .files import read_outcome

PAYLOAD_FILE = "payload.pkl"
POINTS_FILE = "points.pkl"
TASKS_DIR = "tasks"


def task_dir(folder: Path, index: int) -> Path:
    return folder / TASKS_DIR / f"{index:05d}"


def task_outcome(folder: Path, meta: dict[str, Any], job_id: str) -> bool | None:
    """Did sweep task ``job_id`` (``123_4``) fail? ``None``: that attempt left no result.
    Its ``outcome.json`` names the attempt: an earlier one never answers for a retry."""
    array_id, _, position_text = job_id.partition("_")
    if not position_text.isdigit():
        return None
    position = int(position_text)
    for array in meta.get("sweep", {}).get("arrays", ()):
        if str(array.get("job_id")) != array_id:
            continue
        for start, stop in array.get("indices", ()):  # runs of point indices, in task order
            if position < stop - start:
                outcome = read_outcome(task_dir(folder, start + position))
                return outcome.failed if outcome is not None and outcome.job_id == job_id else None
            position -= stop - start
    return None
