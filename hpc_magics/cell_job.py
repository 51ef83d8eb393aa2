"""A cell's job folder and its submission: once from the notebook (``%%sbatch``, which has
checked the cell), and again from an ended job's folder (``handle.rerun``): the same cell
and the same shipped state, as the folder kept them, with changed requests.

A rerun never pickles the notebook again: submitit's pickle of the call (``run_cell``,
the payload, the options) is read back with the one owner-checked loader; the big arrays
stay the files the first job wrote (the payload names them by path, and they never change
in place). The changed request goes through the checks %%sbatch makes (validation against
the profile, the backend's preflight) and the one renderer and submission door
(``backend.submit``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .backends import get_backend
from .core import validation
from .core.errors import HpcMagicsError, InvalidRequest, SubmissionError
from .core.flags import SBATCH_FLAGS
from .core.jobscript import slurm_only
from .core.profiles import ClusterProfile, load_profile
from .core.resources import ResourceRequest, from_dict, to_dict, updated
from .core.scale import ScaleOptions
from .jobfolder.files import load_own
from .jobfolder.folder import JobFolder
from .node.runner import run_cell
from .shipping.packing import Payload

# rerun(mem=..., time=..., cpus_per_task=...): sbatch's long names, "-" as "_"
_FIELDS = {flag.dest: flag.field for flag in SBATCH_FLAGS}


def new_folder(jobs_root: Path, job_name: str, need_bytes: int = 0) -> JobFolder:
    try:
        return JobFolder.create(jobs_root, job_name, need_bytes=need_bytes)
    except OSError as error:  # a read-only or full file system: nothing is submitted
        raise SubmissionError(f"cannot create a job folder in {jobs_root}: "
                              f"{error.strerror}; set HPC_MAGICS_JOBS_DIR to a writable "
                              "folder") from None


def submitted(folder: JobFolder, submit: Callable[[], str], backend: Any,
              request: ResourceRequest, profile: ClusterProfile, job_name: str, shipped: str,
              results: Iterable[str], **more_meta: Any) -> str:
    """The job's meta.json, then ``submit()`` (the backend's): the job id. A submission
    refused says so in meta.json; one that cannot write the folder says that instead.
    The one door of a cell's, a sweep's and a notebook's job."""
    meta = {"name": job_name, "backend": backend.name, "profile": profile.name,
            "request": to_dict(request), "shipped": shipped, "results": list(results),
            "notebook": os.environ.get("JPY_SESSION_NAME", ""), "state": "SUBMITTING",
            **more_meta}
    if backend.name == "local" and (ignored := slurm_only(request)):
        # tried out here: it runs, but never as if on Slurm
        print(f"[hpc_magics] runs on this machine as one process: {', '.join(ignored)} "
              "apply on Slurm only", file=sys.stderr)
    try:
        folder.write_meta(meta)
        return submit()
    except HpcMagicsError as error:
        if not folder.meta().get("job_id"):  # else part of a split sweep was submitted
            folder.update_meta(state="NOT_SUBMITTED", error=str(error))
        raise
    except OSError as error:  # the backend writes nothing after sbatch but says so
        raise SubmissionError(f"cannot write the job folder {folder.path} ({error.strerror}),"
                              " so nothing was submitted: free some space, or set "
                              "HPC_MAGICS_JOBS_DIR to another folder") from None


def submit_cell(jobs_root: Path, backend: Any, payload: Payload, request: ResourceRequest,
                profile: ClusterProfile, job_name: str, options: ScaleOptions | None = None,
                **more_meta: Any) -> tuple[str, JobFolder]:
    """A new job folder, its meta.json, the backend's submission: the job id and folder."""
    # room for the job's files, the state and results as big again
    folder = new_folder(jobs_root, job_name, need_bytes=1_000_000 + 2 * payload.size)
    if options is not None and options.active:
        more_meta["scale"] = options.to_dict()  # the handle reads --gather, --chain here
    job_id = submitted(folder, lambda: backend.submit(folder, payload, request, profile,
                                                      job_name, options),
                       backend, request, profile, job_name, payload.summary(),
                       payload.result_names, fingerprints=dict(payload.fingerprints),
                       **more_meta)  # fetching.py compares the fingerprints
    return job_id, folder


def shipped(folder: JobFolder, job_id: str) -> tuple[Payload, ScaleOptions | None]:
    """The cell and state the job was sent with, as its folder keeps them."""
    path = folder.path / f"{job_id}_submitted.pkl"
    try:
        call = load_own(path)
    except OSError:
        raise HpcMagicsError(f"job {job_id}'s folder {folder.path} does not hold what was "
                             "shipped: only a %%sbatch cell's job can be rerun") from None
    if getattr(call, "function", None) is not run_cell:
        raise HpcMagicsError(f"job {job_id} is not a %%sbatch cell's job: rerun it the way "
                             "it was submitted")
    payload, _, *options = call.args
    return payload, options[0] if options else None


def changed_request(meta: Mapping[str, Any], changes: Mapping[str, Any]) -> ResourceRequest:
    """An ended job's request (its ``meta``'s) with ``changes`` (``mem="12G"``,
    ``time="2h"``, ``partition="long"``) as the flags of the same names would set them. The
    jobs it depended on (-d) have ended long ago: run again, it waits for nothing."""
    if unknown := sorted(set(changes) - set(_FIELDS)):
        raise InvalidRequest(f"rerun: no request named {', '.join(unknown)}: use sbatch's "
                             f"long names with _ for - ({', '.join(sorted(_FIELDS))})")
    request = from_dict(meta.get("request") or {})
    return updated(request, {_FIELDS[name]: str(value) for name, value in changes.items()}
                   ).changed(dependency=None)


def checked(request: ResourceRequest, profile: ClusterProfile, backend: Any) -> None:
    """The checks %%sbatch makes before it submits: every error at once, in one line."""
    from .scheduler.cluster import live_wanted

    validation.refuse(validation.check(request.changed(backend=backend.name), profile))
    backend.preflight(request, profile, live=live_wanted(profile)[0], submitting=True)


def rerun(folder: JobFolder, job_id: str, changes: Mapping[str, Any]) -> tuple[str, JobFolder]:
    """Submit job ``job_id``'s cell again, as its folder keeps it, with ``changes``: a new
    job folder beside it, whose meta says which job it reruns."""
    meta = folder.meta()
    payload, options = shipped(folder, job_id)
    request = changed_request(meta, changes)
    profile = load_profile(meta.get("profile") or request.profile)
    backend = get_backend(meta.get("backend") or request.backend)
    checked(request, profile, backend)
    name = str(meta.get("name") or job_id)
    return submit_cell(folder.path.parent, backend, payload, request, profile, name, options,
                       rerun_of=job_id)

