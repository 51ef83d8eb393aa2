"""``%hpc_submit_notebook [PATH] [flags]``: the whole notebook, as one job.

Registered beside ``HpcMagicsKernel`` (``hpc_magics.magics.register``); it uses that class's
session settings (``%hpc_resources``), job folder and handles when it is loaded, so
``%hpc_fetch``, ``%hpc_cancel`` and ``%hpc_jobs`` work on notebook jobs too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument

from .arguments import lazy_magic_arguments as magic_arguments
from .arguments import parsed_arguments, resource_arguments, values_from_args
from .job_actions import show_handle
from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import profiles, resources
else:  # imported on first use (see lazy.py)
    profiles = lazy_module("hpc_magics.core.profiles")
    resources = lazy_module("hpc_magics.core.resources")


@magics_class
class NotebookJobMagics(Magics):
    @magic_arguments()
    @argument("path", nargs="?", help="notebook file (default: this notebook, as saved)")
    @resource_arguments
    @argument("-J", "--name", help="job name (default: the notebook's name)")
    @argument("--strip-display", action="store_true",
              help="remove display code first, as hpc-magics convert does")
    @argument("--wait", action="store_true", help="block until the job ends, then show "
              "its figures and where the executed notebook is")
    @argument("--dry-run", action="store_true",
              help="print the exact job script (the notebook kernel's world in it) and what "
                   "the job would run; submit nothing, create no job folder")
    @line_magic
    def hpc_submit_notebook(self, line: str = "") -> Any:
        """Run a whole notebook as one job, cell by cell on a kernel on the node.

        The executed notebook is saved in the job folder after every cell, so the cells
        that finished keep their outputs even if the job reaches its time limit.  Save the
        notebook first: the job runs the file as it is on disk.  ``--dry-run`` shows the
        job script the submission would give sbatch, even while Slurm does not answer.
        """
        # loaded on first use: %load_ext stays cheap (tests/magics/test_lazy_imports.py)
        from ..convert.batch import job_for_notebook
        from ..convert.notebook_job import FIGURES_DIR
        from ..convert.script import read_notebook
        from ..notebook_submit import DEFAULT_JOBS_DIR, dry_run, submit_notebook

        args = parsed_arguments(self.hpc_submit_notebook, line)
        # IPython keeps the quotes around a path with spaces
        named = args.path or os.environ.get("JPY_SESSION_NAME", "")
        path = Path(resources._unquote(named)).expanduser()
        if not str(path) or path.suffix != ".ipynb":
            raise UsageError("which notebook? give its path: %hpc_submit_notebook analysis.ipynb")
        hpc = self.shell.magics_manager.registry.get("HpcMagicsKernel") if self.shell else None
        notebook = read_notebook(path)
        request = job_for_notebook(notebook.get("metadata", {}), source=path).request
        if hpc is not None and hpc.request != resources.ResourceRequest(
                profile=hpc.default_profile, backend=hpc.request.backend):
            request = hpc.request  # %hpc_resources settings of this session win
        if args.profile:
            profiles.load_profile(args.profile)
            request = request.changed(profile=args.profile)
        request = resources.updated(request, values_from_args(args))
        profile = profiles.load_profile(request.profile)
        jobs_root = hpc.jobs_root if hpc is not None else Path(DEFAULT_JOBS_DIR).resolve()
        if args.dry_run:
            print(dry_run(path, request, profile, jobs_root=jobs_root,
                          name=args.name, strip_display=args.strip_display).text(), end="")
            return None
        job = submit_notebook(path, request, profile, jobs_root=jobs_root,
                              name=args.name, strip_display=args.strip_display)
        handle = job.handle
        if hpc is not None:
            hpc.remember(handle)
            show_handle(handle)
        print(f"[hpc_magics] executed notebook, saved after every cell: {job.executed_notebook}")
        if not args.wait:
            return None
        state = handle.wait()
        print(f"[hpc_magics] job {handle.job_id}: {state}")
        from IPython.display import Image, display

        for figure in sorted((handle.folder.path / FIGURES_DIR).glob("cell-*.png")):
            display(Image(filename=str(figure)))
        return None
