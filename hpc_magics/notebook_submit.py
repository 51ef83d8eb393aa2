"""``hpc-magics submit NB.ipynb``: a whole notebook as one job (from a shell, or JupyterLab's
terminal).  The job goes through the same backends (Slurm or local) and job folders as
``%%sbatch`` cells, so ``%hpc_jobs``, ``%hpc_cancel`` and ``%hpc_fetch`` see it.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .convert.batch import job_for_notebook, job_name
from .convert.kernelspec import kernel_world_of
from .convert.notebook_job import NOTEBOOK_IN, NOTEBOOK_OUT, prepare_notebook
from .convert.script import read_notebook
from .core import validation
from .core.flags import add_flag_arguments, flag_values
from .core.jobs_root import jobs_root as notebook_jobs_root
from .core.profiles import ClusterProfile, load_profile
from .core.resources import ResourceRequest, updated

if TYPE_CHECKING:
    from .handle import JobHandle


def _prepare(path: Path, request: ResourceRequest, profile: ClusterProfile,
             strip_display: bool, *, submitting: bool = True
             ) -> tuple[Any, Any, dict[str, Any], str]:
    """The request with this machine's defaults, the backend (set up for the notebook's
    kernel), the notebook the job runs and the kernel's name; refuses bad input first
    (``submitting`` False: a dry run, never refused because Slurm does not answer)."""
    from .backends import get_backend
    from .backends.submitit_backend import SlurmBackend
    from .scheduler.cluster import live_wanted, with_environment

    # this machine's sbatch defaults count, as sbatch will apply them
    request = with_environment(request, live_wanted(profile)[0])[0]
    validation.refuse(validation.check(request, profile))
    notebook = read_notebook(path)
    prepared = prepare_notebook(notebook, strip_display=strip_display)
    backend = get_backend(request.backend)  # the interpreter: HPC_MAGICS_PYTHON, as for a cell
    # the kernel the notebook names, found here and (on Slurm) reachable from a node; the
    # job carries its world, not this process's modules (core/notebook_world.py)
    kernel = kernel_world_of(notebook, os.environ, on_a_cluster=backend.name == "slurm")
    if isinstance(backend, SlurmBackend):
        backend.notebook_kernel = kernel
    backend.preflight(request, profile, submitting=submitting)
    return request, backend, prepared, kernel.name


def _what_runs(path: Path, prepared: dict[str, Any], kernel: str) -> str:
    """What the job runs, as meta.json's ``shipped`` and a dry run say it."""
    count = len(prepared["cells"])
    return f"the notebook {path.name} ({count} cell{'s' * (count != 1)}, kernel {kernel})"


def _job_code(folder: Path, path: Path, kernel: str) -> str:
    """The Python the job's node runs: the notebook, cell by cell, beside its own folder."""
    workdir = str(path.resolve().parent)
    return ("from hpc_magics.convert.notebook_job import run_notebook_job\n"
            f"run_notebook_job({str(folder)!r}, {workdir!r}, kernel_name={kernel!r})\n")


@dataclass(frozen=True)
class DryRun:
    """What ``--dry-run`` shows: the job script as the submission renders it, and what runs."""

    folder: Path  # where the job folder would be (time stamp and random part spelled out)
    script: str
    what_runs: str
    code: str

    def text(self) -> str:
        code = "".join(f"#   {line}\n" for line in self.code.splitlines())
        return (f"# dry run: nothing submitted. The job folder would be {self.folder} (its "
                "time stamp and random part are set at submission).\n"
                f"{self.script}"
                f"# the job runs {self.what_runs}, cell by cell, saving the executed notebook "
                f"after every cell as {self.folder / NOTEBOOK_OUT}; in the job:\n{code}")


def dry_run(path: Path, request: ResourceRequest, profile: ClusterProfile, *,
            jobs_root: Path, name: str | None = None,
            strip_display: bool = False) -> DryRun:
    """What ``submit_notebook`` would submit, checked as it checks; creates nothing and
    shows the script whether Slurm's controller answers or not."""
    from .jobfolder.folder import JobFolder

    request, backend, prepared, kernel = _prepare(path, request, profile,
                                                  strip_display, submitting=False)
    name = name or job_name(path.stem)
    folder = JobFolder.would_be(jobs_root, name).absolute()
    # the backend's one renderer, as its submit() calls it with the real folder
    script = str(backend.job_script(str(folder), request, profile, name))
    return DryRun(folder, script, _what_runs(path, prepared, kernel),
                  _job_code(folder, path, kernel))


def submit_notebook(path: Path, request: ResourceRequest, profile: ClusterProfile, *,
                    jobs_root: Path, name: str | None = None,
                    strip_display: bool = False) -> JobHandle:
    """Prepare the notebook in a new job folder and submit it; returns at once (the executed
    notebook will be ``NOTEBOOK_OUT`` in its folder)."""
    from .cell_job import submitted
    from .handle import JobHandle
    from .jobfolder.folder import JobFolder
    from .shipping.packing import Payload

    request, backend, prepared, kernel = _prepare(path, request, profile, strip_display)
    name = name or job_name(path.stem)
    folder = JobFolder.create(jobs_root, name)
    (folder.path / NOTEBOOK_IN).write_text(json.dumps(prepared, indent=1), encoding="utf-8")
    code = _job_code(folder.path, path, kernel)
    executed = folder.path / NOTEBOOK_OUT
    job_id = submitted(folder, lambda: backend.submit(folder, Payload(code=code), request,
                                                      profile, name),
                       backend, request, profile, name, _what_runs(path, prepared, kernel), (),
                       kind="notebook", notebook=str(path.resolve()),
                       executed_notebook=str(executed))
    return JobHandle(job_id, backend, folder, name)


# ---------------------------------------------------------------------- the command
def add_parser(subcommands: argparse._SubParsersAction) -> None:
    parser = subcommands.add_parser(
        "submit", help="run a whole notebook as one job",
        description="Run the notebook cell by cell as one job; the executed notebook is saved "
                    "after every cell in the job folder, so finished cells survive a time limit.")
    parser.add_argument("notebook", type=Path, help="the .ipynb file")
    parser.add_argument("--profile", default=None, help="cluster profile (default: the "
                        "notebook's metadata, else 'generic')")
    add_flag_arguments(parser, "shell line run before the job (repeatable)")
    parser.add_argument("--backend", choices=["auto", "slurm", "local"], default=None,
                        help="slurm, local (this machine), or auto (slurm when sbatch exists)")
    parser.add_argument("-J", "--name", default=None, help="job name (default: the notebook's)")
    parser.add_argument("--jobs-dir", type=Path, default=None, metavar="DIR",
                        help="folder for job folders (default: $HPC_MAGICS_JOBS_DIR, else "
                             "hpc_jobs; beside the notebook, as for its kernel)")
    parser.add_argument("--strip-display", action="store_true",
                        help="remove display code first, as hpc-magics convert does")
    parser.add_argument("--wait", action="store_true", help="wait for the job to end")
    parser.add_argument("--dry-run", action="store_true", help="print the exact job script "
                        "(the notebook kernel's world in it) and what the job would run; "
                        "submit nothing, create no job folder")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    asked = job_for_notebook(read_notebook(args.notebook).get("metadata", {}), args.profile,
                             source=args.notebook)
    request = updated(asked.request, flag_values(args) | {"backend": args.backend})
    profile = load_profile(request.profile)
    # where the notebook's kernel puts its jobs (%hpc_jobs lists them), unless --jobs-dir
    jobs_root = (args.jobs_dir.expanduser().resolve() if args.jobs_dir
                 else notebook_jobs_root(args.notebook.resolve().parent))
    if args.dry_run:
        print(dry_run(args.notebook, request, profile, jobs_root=jobs_root,
                      name=args.name, strip_display=args.strip_display).text(), end="")
        return 0
    handle = submit_notebook(args.notebook, request, profile, jobs_root=jobs_root,
                             name=args.name, strip_display=args.strip_display)
    print(f"submitted job {handle.job_id} ({handle.backend.name}): {handle.folder.path}")
    print(f"executed notebook (saved after every cell): {handle.folder.path / NOTEBOOK_OUT}")
    if not args.wait:
        return 0
    from .jobfacts import end_line

    state = handle.wait()
    why = end_line(handle.folder, handle.job_id, state)  # as %hpc_jobs says it
    print(f"job {handle.job_id}: {state}" + (f": {why}" if why else ""))
    return 0 if state in {"COMPLETED", "FINISHED"} else 1
