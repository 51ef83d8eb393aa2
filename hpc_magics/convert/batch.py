"""The ``NAME.sbatch`` file beside a converted script: header, setup lines, the run line."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..core.cost import cost_line
from ..core.errors import InvalidRequest
from ..core.flags import FLAG_FIELDS
from ..core.jobscript import JobParts, render
from ..core.profiles import ClusterProfile, load_profile, others_could_write
from ..core.resources import ResourceRequest, from_dict, updated
from ..core.validation import check

DEFAULT_PROFILE = "generic"
# Fields whose text is the value itself, with no flag of its own to parse it.
_PLAIN_TEXT_FIELDS = frozenset({"profile", "backend"})


@dataclass(frozen=True)
class BatchJob:
    """What the job asks for and where that came from (said in the file, for the reader)."""

    request: ResourceRequest
    profile: ClusterProfile
    origin: str


def job_for_notebook(metadata: Mapping[str, Any], profile_name: str | None = None,
                     source: Path | None = None) -> BatchJob:
    """The request from ``metadata.hpc_magics.resources``, checked against the profile.

    ``profile_name`` (``--profile``) wins over the profile named in the metadata.
    ``source``: the notebook file; its metadata's setup lines (shell, run as this user)
    are refused when another user could have written it.
    """
    ours = metadata.get("hpc_magics")
    stored = ours.get("resources") if isinstance(ours, Mapping) else None
    if stored is not None and not isinstance(stored, Mapping):
        raise InvalidRequest("notebook metadata hpc_magics.resources must be a mapping of "
                             "resource names to values: fix it in Edit > Notebook Metadata")
    notebook_request = stored_request(stored) if stored else None
    why = others_could_write(source) if source and notebook_request and \
        notebook_request.setup else None
    if why is not None:
        raise InvalidRequest(
            f"notebook {source}: its metadata's setup lines (hpc_magics.resources.setup) run "
            f"as you and are not used: {why}: copy the notebook to a file of your own and "
            "read them, or remove them")
    name = profile_name or (notebook_request.profile if notebook_request else DEFAULT_PROFILE)
    profile = load_profile(name)
    request = ResourceRequest(profile=profile.name)
    origin = f"profile {profile.name!r}"
    if notebook_request is not None:
        request = request.changed(**{field: value for field, value in vars(notebook_request).items()
                                     if value not in (None, (), "auto") and field != "profile"})
        origin = f"the notebook's metadata (hpc_magics.resources) over {origin}"
    return BatchJob(request, profile, origin)


def stored_request(stored: Mapping[str, Any]) -> ResourceRequest:
    """The request in a notebook's metadata, typed as hpc_magics stores it (``"time_s": 900``)
    or as a person types it in Edit > Notebook Metadata, with sbatch's names and texts
    (``"time": "2h"``, ``"cpus-per-task": "2"``), which are parsed as the flags are."""
    known = {f.name for f in fields(ResourceRequest)}
    typed: dict[str, Any] = {}
    texts: dict[str, Any] = {}
    for key, value in stored.items():
        name = FLAG_FIELDS.get(str(key), str(key)).replace("-", "_")
        if name not in known:
            raise InvalidRequest(
                f"notebook metadata hpc_magics.resources: {key!r} is not a resource: use "
                f"sbatch's flag names ({', '.join(sorted(k for k in FLAG_FIELDS if len(k) > 1))}), "
                "profile or setup")
        if name == "setup" and isinstance(value, str):
            typed[name] = [value]
        elif isinstance(value, str) and name not in _PLAIN_TEXT_FIELDS:
            texts[name] = value
        else:
            typed[name] = value
    try:
        return updated(from_dict(typed), texts)
    except InvalidRequest as error:
        raise InvalidRequest(f"notebook metadata hpc_magics.resources: {error}") from None


def job_name(notebook_name: str) -> str:
    """A job name Slurm and shells take as one word."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", notebook_name).strip("_") or "notebook"


def render_sbatch(notebook_name: str, script_name: str, job: BatchJob, interpreter: str,
                  world: tuple[str, ...]) -> str:
    """The ``.sbatch`` file, from the same renderer as the jobs ``%%sbatch`` submits."""
    request = job.request
    notes = [f"{notebook_name}.ipynb as a batch job, made by `hpc-magics convert`.",
             f"Resources: {job.origin}; {cost_line(request)}.",
             f"Submit from this folder: sbatch {shlex.quote(notebook_name + '.sbatch')}",
             *(str(problem) for problem in check(request, job.profile))]
    tasks = request.node_count * (request.ntasks_per_node or 1)
    if tasks > 1:  # a notebook is one process: say so rather than guess it is distributed
        notes += [f"{tasks} tasks asked, but the script runs once, on the first node;",
                  f"`srun {interpreter} {shlex.quote(script_name)}` runs one copy per task, "
                  "for a script written for that (torch.distributed, mpi4py)."]
    return render(request, job.profile, JobParts(
        job_name=job_name(notebook_name), notes=tuple(notes),
        prologue=("set -e", *world),  # world: the notebook's kernel's (convert/kernelspec.py)
        run=("# Display code was stripped; Agg draws any remaining figure off-screen.",
             "export MPLBACKEND=Agg",
             f"{interpreter} {shlex.quote(script_name)}")))
