"""One task of a sweep, on the node: the cell with this task's parameters.

The cell's shipped state is in the job folder ONCE (``payload.pkl``, written at
submission); each task's own pickle (submitit's ``%A_%a_submitted.pkl``) holds only its
index and parameters. A task writes the runner's usual files (``results.pkl``,
``output.txt``, ``figures/``) into ``tasks/NNNNN/`` plus ``task.json`` (its attempt's id,
timing and whether the cell raised), written last.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..jobfolder.files import OUTPUT_FILE, RESULTS_FILE
from ..jobfolder.live_stream import STREAM_FILE
from ..jobfolder.tasks import PAYLOAD_FILE, TASK_FILE, task_dir, write_task_info
from ..shipping.packing import Payload
from .runner import run_cell


def run_task(folder: str, index: int, parameters: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a sweep task (through submitit). Raises again if the cell raised."""
    job_folder = Path(folder)
    with (job_folder / PAYLOAD_FILE).open("rb") as stream:
        payload: Payload = pickle.load(stream)
    target = task_dir(job_folder, index)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    lead_task = os.environ.get("SLURM_PROCID", "0") == "0"
    if lead_task:  # a retried task starts clean: no result of the failed attempt stays
        for stale in (RESULTS_FILE, OUTPUT_FILE, STREAM_FILE, TASK_FILE):
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
