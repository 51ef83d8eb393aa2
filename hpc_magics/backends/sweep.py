"""Submitting a sweep: ONE Slurm job array for all the cell's points, its shipped state
and points written once (``payload.pkl``, ``points.pkl``). An array longer than
``MaxArraySize`` is split (``job.sh``, ``job-2.sh``, ...); a retry of failed tasks is one
more array in the same folder (``job-retry1.sh``), so the results table merges it.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import HpcMagicsError, SubmissionError
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..core.sweep import ArrayPart, Point, array_range, compress, split
from ..jobfolder.files import write_atomically
from ..jobfolder.folder import JobFolder
from ..jobfolder.tasks import PAYLOAD_FILE, POINTS_FILE
from ..node.runner import run_task
from ..shipping.buffers import write_buffers
from ..shipping.packing import Payload
from .submitit_backend import ScriptedSlurmExecutor, SlurmBackend, _write_job_py

KIND = "sweep"


@dataclass(frozen=True)
class ArrayScript:
    part: ArrayPart
    name: str  # file name in the job folder
    text: str  # the script, exactly as sbatch gets it


def script_name(part: int, retry: int = 0) -> str:
    stem = f"job-retry{retry}" if retry else "job"
    return f"{stem}.sh" if part == 0 else f"{stem}-{part + 1}.sh"


def plan(backend: Any, folder: str, request: ResourceRequest, profile: ClusterProfile,
         job_name: str, indices: Sequence[int], parallelism: int | None,
         max_array_size: int, retry: int = 0) -> list[ArrayScript]:
    """The array scripts for ``indices`` (pure: a dry run shows them)."""
    if not isinstance(backend, SlurmBackend):
        raise HpcMagicsError("--sweep runs a Slurm job array: there is no Slurm here "
                             "(use --backend slurm on a cluster, or loop in the cell)")
    return [ArrayScript(part, script_name(number, retry),
                        backend.job_script(folder, request, profile, job_name,
                                           array=array_range(part.size, parallelism)))
            for number, part in enumerate(split(list(indices), max_array_size))]


def _submit_arrays(folder: JobFolder, scripts: Sequence[ArrayScript], points: Sequence[Point],
                   request: ResourceRequest, attempt: int) -> list[str]:
    """One sbatch per array script; the ids are recorded in meta.json as they come."""
    tasks_per_job = (request.nodes or 1) * (request.ntasks_per_node or 1)
    ids: list[str] = []
    for script in scripts:
        executor = ScriptedSlurmExecutor(folder.path, script.text, tasks_per_job, array=True,
                                         script_name=script.name)
        indices = list(script.part.indices)
        try:
            jobs = executor.map_array(run_task, [str(folder.path)] * len(indices), indices,
                                      [points[i] for i in indices])
        except FileNotFoundError as error:
            raise SubmissionError(f"could not submit: {error}") from None
        array_id = str(jobs[0].job_id).split("_", 1)[0]
        ids.append(array_id)
        sweep_meta = folder.meta().get(KIND, {})
        cluster = executor.submitted.cluster if executor.submitted else None
        arrays = [*sweep_meta.get("arrays", []), {
            "job_id": array_id, "indices": compress(indices), "script": script.name,
            "attempt": attempt, "cluster": cluster}]
        folder.update_meta(**{KIND: {**sweep_meta, "arrays": arrays}})
    return ids


def submit(folder: JobFolder, payload: Payload, request: ResourceRequest,
           scripts: Sequence[ArrayScript], points: Sequence[Point], job_name: str,
           parallelism: int | None) -> str:
    """Submit the sweep's arrays; returns the first array's id (the folder's job)."""
    payload = write_buffers(payload, folder.path)  # big arrays: raw files, once for all tasks
    try:
        write_atomically(folder.path / PAYLOAD_FILE, pickle.dumps(payload))
        write_atomically(folder.path / POINTS_FILE, pickle.dumps(list(points)))
    except Exception as error:  # a value --sweep-from gave that does not pickle
        raise HpcMagicsError(f"the sweep's parameters do not pickle ({error}): use plain "
                             "values (numbers, strings, tuples)") from None
    names = list(dict.fromkeys(name for point in points for name in point))
    _write_job_py(folder, payload, job_name, head=(
        f"# A sweep of {len(points)} tasks: each sets {', '.join(names)} (its point, from "
        "points.pkl) first;\n# the names below travel once for all tasks, in payload.pkl."))
    started = time.time()
    folder.update_meta(kind=KIND, submitted_at=started, backend="slurm", **{KIND: {
        "count": len(points), "parameters": names, "parallelism": parallelism,
        "arrays": []}})
    try:
        _submit_arrays(folder, scripts, points, request, attempt=0)
    except HpcMagicsError as error:
        submitted = [str(a["job_id"]) for a in folder.meta().get(KIND, {}).get("arrays", [])]
        if not submitted:
            raise
        # a split sweep whose later array was refused: the first ones run, and are known
        _record_first(folder, started)
        raise SubmissionError(
            f"{len(submitted)} of {len(scripts)} arrays of the sweep were submitted "
            f"({', '.join(submitted)}), then: {error}; cancel them with %hpc_cancel "
            f"{submitted[0]}, or see the table with hpc_magics.job('{submitted[0]}')") from None
    return _record_first(folder, started)


def _record_first(folder: JobFolder, started: float) -> str:
    """The folder's job is its first array: its id and cluster, as sbatch answered."""
    from ..scheduler.job_status import record_submission

    first = folder.meta()[KIND]["arrays"][0]
    record_submission(folder, str(first["job_id"]), started, first.get("cluster"))
    return str(first["job_id"])


def resubmit(folder: JobFolder, scripts: Sequence[ArrayScript], points: Sequence[Point],
             request: ResourceRequest, attempt: int) -> list[str]:
    """Failed tasks again, as one array in the same folder (``SweepHandle.rerun``)."""
    ids = _submit_arrays(folder, scripts, points, request, attempt)
    # the queue and accounting match entries by submit time: the window now covers the retry
    folder.update_meta(submit_returned_at=time.time())
    return ids
