"""One task of a sweep, on the node: the cell with this task's parameters.

The shipped state is in the job folder once (``payload.pkl``); each task's own pickle holds
only its index and parameters. A task writes the runner's usual files into ``tasks/NNNNN/``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..jobfolder.files import OUTCOME_FILE, OUTPUT_FILE, RESULTS_FILE, load_own
from ..jobfolder.live_stream import STREAM_FILE
from ..jobfolder.tasks import PAYLOAD_FILE, task_dir
from ..shipping.packing import Payload
from .runner import run_cell


def run_task(folder: str, index: int, parameters: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a sweep task (through submitit). Raises again if the cell raised."""
    job_folder = Path(folder)
    payload: Payload = load_own(job_folder / PAYLOAD_FILE)
    target = task_dir(job_folder, index)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.environ.get("SLURM_PROCID", "0") == "0":
        # a retried task starts clean: no result of the failed attempt stays
        for stale in (OUTCOME_FILE, RESULTS_FILE, OUTPUT_FILE, STREAM_FILE):
            (target / stale).unlink(missing_ok=True)
    return run_cell(replace(payload, parameters=parameters), str(target))
