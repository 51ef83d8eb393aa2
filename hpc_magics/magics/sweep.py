"""``%%sbatch --sweep/--sweep-from/--array-parallelism``, and the job
references ``-d/--dependency`` takes in a cell (``afterok:prep``).

Everything is checked (points, limits, job references) before anything is submitted. A
sweep's failed tasks are retried by its handle (``hpc_magics.job().rerun()``, the
widget's "Retry failed").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .job_actions import show_handle, wait_and_fetch
from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import jobids, resources, sweep
    from ..core.resources import ResourceRequest
else:  # imported on first use (see lazy.py)
    jobids = lazy_module("hpc_magics.core.jobids")
    sweep = lazy_module("hpc_magics.core.sweep")
    resources = lazy_module("hpc_magics.core.resources")

SWEEP_ARGUMENTS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("--sweep",), {"action": "append", "metavar": "NAME=V1,V2",
                    "help": "run the cell once per value (repeatable: the product of all); "
                            "each task gets NAME as a variable. One Slurm job array"}),
    (("--sweep-from",), {"metavar": "NAME",
                         "help": "the sweep's points from a notebook variable: a list of "
                                 "dicts, a dict of equally long lists, or a DataFrame"}),
    (("--array-parallelism",), {
        "metavar": "N", "help": "at most N tasks of the sweep run at once (--array=0-K%%N)"}),
]


# ------------------------------------------------------------------ points
def points(args: Any, namespace: dict[str, Any]) -> list[sweep.Point] | None:
    """The sweep's points, or ``None`` when the cell is no sweep; bad input: UsageError."""
    if not args.sweep and not args.sweep_from:
        if args.array_parallelism is not None:
            raise UsageError("--array-parallelism limits a sweep's tasks: add --sweep "
                             "NAME=V1,V2 or --sweep-from NAME")
        return None
    base = None
    if args.sweep_from:
        name = resources._unquote(args.sweep_from)
        if name not in namespace:
            raise UsageError(f"--sweep-from {name}: the notebook has no variable {name!r}: "
                             "define it first (a list of dicts, or a dict of lists)")
        base = sweep.points_from(name, namespace[name])
    found = sweep.sweep_points(args.sweep or [], base)
    sweep.check_parallelism(args.array_parallelism)
    return found


def without_parameters(names: Any, found: Sequence[sweep.Point]) -> Any:
    """The cell's free names minus the sweep's parameters (they are set per task)."""
    parameters = {name for point in found for name in point}
    return replace(names, free=tuple(n for n in names.free if n not in parameters))


# ------------------------------------------------------------------ dependencies
def _job_reference(magics: Any, reference: str) -> tuple[list[str], list[str]]:
    """A job id, a handle variable's name, or a job folder's name → Slurm job ids, as
    (those that must end well, those that need only end)."""
    from ..handle import JobHandle

    reference = resources._unquote(reference)
    namespace = magics.shell.user_ns if magics.shell is not None else {}
    value = namespace.get(reference) if reference.isidentifier() else None
    if isinstance(value, JobHandle):
        return _ids_of(value)
    if jobids.parse_job_id(reference) is not None:
        return [reference], []
    try:
        return _ids_of(magics.handle_for(reference))
    except UsageError:
        raise UsageError(f"-d ...:{reference}: not a job id, job folder name or job handle "
                         "variable of this notebook: see %hpc_jobs") from None


def _ids_of(handle: Any) -> tuple[list[str], list[str]]:
    arrays = getattr(handle, "array_ids", None)
    if not callable(arrays):
        return [str(handle.job_id)], []
    retried = sweep.superseded_arrays(handle.folder.meta().get("sweep", {}).get("arrays", []))
    return [a for a in arrays() if a not in retried], [a for a in arrays() if a in retried]


def resolved_dependency(magics: Any, text: str | None) -> str | None:
    """sbatch's ``-d`` value with this notebook's job references made ids:
    ``afterok:prep:123,afterany:train`` where ``prep`` is a job folder name or a handle
    variable. A sweep stands for its arrays; with ``afterok``, an array whose failed tasks
    were retried waits with ``afterany`` (it cannot end well), its retries with ``afterok``.
    Ids (``123``, ``123_4``, ``123+10``), ``singleton`` and sbatch's ``?`` stay as written."""
    if not text:
        return text
    parts = re.split(r"([,?])", resources._unquote(text))
    for position in range(0, len(parts), 2):
        kind, colon, references = parts[position].partition(":")
        if not colon:
            continue
        ids: list[str] = []
        ended: list[str] = []
        for reference in references.split(":"):
            if reference[:1].isdigit() or not reference:
                ids.append(reference)
                continue
            ok, superseded = _job_reference(magics, reference)
            ids += ok
            ended += superseded if kind == "afterok" else []
            ids += [] if kind == "afterok" else superseded
        item = ":".join([kind, *dict.fromkeys(ids)]) if ids else ""
        if ended:
            item += ("," if item else "") + ":".join(["afterany", *dict.fromkeys(ended)])
        parts[position] = item
    return "".join(parts)


# ------------------------------------------------------------------ submission
def plan(backend: Any, folder: str, request: ResourceRequest, profile: Any, job_name: str,
         found: Sequence[sweep.Point], args: Any, max_array_size: int) -> list[Any]:
    from ..backends import sweep as sweep_backend

    return sweep_backend.plan(backend, folder, request, profile, job_name, range(len(found)),
                              sweep.check_parallelism(args.array_parallelism), max_array_size)


def run(magics: Any, args: Any, backend: Any, payload: Any, request: ResourceRequest,
        profile: Any, job_name: str, found: list[sweep.Point], would_be: str) -> None:
    """The sweep part of ``%%sbatch``: a dry run, or create the job folder, submit the
    arrays, show the sweep's handle and maybe wait."""
    from ..core.users import login_name
    from ..scheduler import limits
    from ..scheduler.watcher import watcher

    limit = limits.submit_limit(login_name(), request.account)
    if limit is not None:  # a sweep over the jobs-per-user limit is refused
        queued = limits.queued_jobs(watcher().queue.view().jobs)
        sweep.check_submit_limit(len(found), queued, limit)
    max_array_size = limits.max_array_size()
    # rendered where the folder would be: what cannot be submitted stops before it exists
    scripts = plan(backend, would_be, request, profile, job_name, found, args, max_array_size)
    if args.dry_run:
        print(f"# dry run: nothing submitted. The job folder would be {would_be}.")
        print(f"# a sweep of {len(found)} tasks as {len(scripts)} job "
              f"arr{'ay' if len(scripts) == 1 else 'ays'}; first point: {found[0]}")
        for script in scripts:
            print(f"# ---- {script.name} (points {script.part.indices[0]}.."
                  f"{script.part.indices[-1]})\n{script.text.rstrip()}")
        print(f"# {payload.summary()} (once, for all tasks)")
        return
    from ..backends import sweep as sweep_backend
    from ..cell_job import new_folder, submitted
    from ..jobfolder.folder import JobFolder
    from ..sweep_handle import SweepHandle
    from .submission import sent_from_meta

    print(f"[hpc_magics] {payload.summary()} (once, for all {len(found)} tasks)")
    folder = new_folder(magics.jobs_root, job_name)
    sent = sent_from_meta(magics.shell)  # the server writes the sweep's table into its cell
    scripts = plan(backend, str(folder.path.absolute()), request, profile, job_name, found,
                   args, max_array_size)
    job_id = submitted(folder, lambda: sweep_backend.submit(
        folder, payload, request, scripts, found, job_name,
        sweep.check_parallelism(args.array_parallelism)), backend, request, profile,
        job_name, payload.summary(), payload.result_names, kind="sweep", **sent)
    handle = magics.remember(SweepHandle(job_id, backend, JobFolder(folder.path), job_name))
    widget = show_handle(handle)
    if args.wait:
        wait_and_fetch(handle, magics.shell, widget)
        return
    print(f"[hpc_magics] sweep {handle.job_id}: table later with hpc_magics.job().table()")
