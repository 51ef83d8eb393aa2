"""One task of a sweep, on the node: the cell with this task's parameters.

The cell's shipped state is in the job folder ONCE (``payload.pkl``, written at
submission); each task's own pickle (submitit's ``%A_%a_submitted.pkl``) holds only its
index and parameters. A task writes the runner's usual files (``results.pkl``,
``output.txt``, ``figures/``) into ``tasks/NNNNN/`` plus ``task.json`` (its attempt's id,
timing and whether the cell raised), written last.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .packing import Payload
from .runner import OUTPUT_FILE, RESULTS_FILE, run_cell

PAYLOAD_FILE = "payload.pkl"
POINTS_FILE = "points.pkl"
TASKS_DIR = "tasks"
TASK_FILE = "task.json"


def task_dir(folder: Path, index: int) -> Path:
    return folder / TASKS_DIR / f"{index:05d}"


def write_task_info(target: Path, info: dict[str, Any]) -> None:
    temporary = target / f".{TASK_FILE}.tmp"
    temporary.write_text(json.dumps(info))
    os.replace(temporary, target / TASK_FILE)


def run_task(folder: str, index: int, parameters: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a sweep task (through submitit). Raises again if the cell raised."""
    job_folder = Path(folder)
    with (job_folder / PAYLOAD_FILE).open("rb") as stream:
        payload: Payload = pickle.load(stream)
    target = task_dir(job_folder, index)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    lead_task = os.environ.get("SLURM_PROCID", "0") == "0"
    if lead_task:  # a retried task starts clean: no result of the failed attempt stays
        for stale in (RESULTS_FILE, OUTPUT_FILE, TASK_FILE):
            (target / stale).unlink(missing_ok=True)
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID", "")
    info: dict[str, Any] = {
        "index": index, "started": time.time(),
        "job_id": f"{array_job}_{os.environ.get('SLURM_ARRAY_TASK_ID', '')}" if array_job
        else os.environ.get("SLURM_JOB_ID", ""),
    }
    info["failed"] = True  # until the cell returns
    try:
        returned = run_cell(replace(payload, parameters=parameters), str(target))
        info["failed"] = False
        return returned
    finally:
        if lead_task and (target / RESULTS_FILE).exists():  # task.json comes last
            info["elapsed"] = time.time() - info["started"]
            write_task_info(target, info)


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
