"""``%hpc_resources`` and ``%%sbatch``: the session's request and the cells it submits.

``HpcMagicsKernel`` also holds the kernel's settings (``c.HpcMagicsKernel.*`` in
``ipython_config.py``, or ``%config``) and the session's jobs; ``job_actions.py`` fetches,
cancels and lists them; ``plain_python`` below makes a cell's IPython syntax plain Python.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument
from traitlets import Float, Unicode, default

from ..core.errors import HpcMagicsError
from ..core.jobs_root import jobs_dir_setting, jobs_root
from . import sweep as sweep_magic
from .arguments import lazy_magic_arguments as magic_arguments
from .arguments import parsed_arguments, resource_flags, values_from_args
from .job_actions import show_handle, wait_and_fetch
from .lazy import arguments_from, lazy_module
from .resource_view import ResourceView
from .scale import options_from_args, scale_flags
from .submission import default_job_name, print_dry_run, sent_from_meta

if TYPE_CHECKING:
    from ..core import directives as directive_parser
    from ..core import profiles, resources, sites, validation
    from ..core.profiles import ClusterProfile
    from ..core.resources import ResourceRequest
else:  # imported on first use: %load_ext stays cheap (see lazy.py)
    directive_parser = lazy_module("hpc_magics.core.directives")
    profiles = lazy_module("hpc_magics.core.profiles")
    resources = lazy_module("hpc_magics.core.resources")
    sites = lazy_module("hpc_magics.core.sites")
    validation = lazy_module("hpc_magics.core.validation")

def plain_python(body: str) -> tuple[str, str]:
    """A cell with IPython syntax (``!cmd``, ``%time``, ``%%bash``) as plain Python.

    Returns the translated cell and the helper code it needs; a cell that is already plain
    Python comes back unchanged, and one that is not valid either way is left for the
    syntax check to report.
    """
    try:
        ast.parse(body)
        return body, ""
    except (SyntaxError, ValueError):  # ValueError: a null byte, on some 3.11 releases
        pass
    from ..convert.magics import translate_magics
    from ..convert.script import helper_code

    try:
        translated = translate_magics(body)
    except (SyntaxError, ValueError):
        return body, ""
    return translated.source, helper_code(translated.needs)


@magics_class
class HpcMagicsKernel(Magics):
    """The kernel's settings (``c.HpcMagicsKernel.*``), the session's request and jobs,
    and the magics that submit: ``%hpc_resources``, ``%%sbatch``."""

    jobs_dir = Unicode(
        jobs_dir_setting(),
        help="Folder for job folders, relative to the kernel's working directory "
             "(beside the notebook).").tag(config=True)
    default_profile = Unicode(
        help="Cluster profile used until %hpc_resources --profile says otherwise (default: "
             "$HPC_MAGICS_PROFILE, else the profile of $SLURM_CLUSTER_NAME, else generic).",
    ).tag(config=True)
    max_shipped_mb = Float(
        1024.0, help="Largest state (MB, pickled) a %%sbatch cell may ship.").tag(config=True)

    @default("default_profile")
    def _default_profile(self) -> str:
        return str(sites.default_profile_name())

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.handles: dict[str, Any] = {}
        self.last_job: str | None = None

    @functools.cached_property
    def request(self) -> ResourceRequest:
        """The session's request (made when first used: the core loads with it)."""
        return self._session_start()

    def _session_start(self) -> ResourceRequest:
        """The request a session starts with, and ``--reset`` goes back to."""
        return resources.ResourceRequest(profile=self.default_profile,
                                         backend=os.environ.get("HPC_MAGICS_BACKEND", "auto"))

    @property
    def jobs_root(self) -> Path:
        return jobs_root(Path.cwd(), self.jobs_dir)

    def _switch_profile(self, request: ResourceRequest, args: Any,
                        cell_values: Mapping[str, Any] | None = None) -> ResourceRequest:
        """The request under ``--profile``, without what named the cluster before; what
        the line (or the cell's #SBATCH lines) gives again replaces it and is not named."""
        if not getattr(args, "profile", None):
            return request
        profiles.load_profile(args.profile)  # fail now on an unknown name
        given = {**(cell_values or {}),
                 **{k: v for k, v in values_from_args(args).items() if v is not None}}
        request, dropped = resources.for_profile(request, args.profile, given)
        if dropped:
            print(f"[hpc_magics] profile {args.profile}: dropped {', '.join(dropped)} "
                  "(named for the cluster before; give them again if they apply)")
        return request

    def apply(self, request: ResourceRequest, args: Any) -> ResourceRequest:
        return resources.updated(self._switch_profile(request, args), values_from_args(args))

    def _problems(self, request: ResourceRequest,
                  profile: ClusterProfile) -> list[validation.Problem]:
        """The request (with the environment's sbatch defaults, as sbatch will apply them)
        checked against its profile, as the backend it resolves to."""
        from ..backends import choose_backend_name

        try:
            resolved = choose_backend_name(request.backend)
        except HpcMagicsError as error:
            return [validation.Problem(validation.ERROR, "backend", str(error))]
        return validation.check(request.changed(backend=resolved), profile)

    @magic_arguments()
    @arguments_from(resource_flags)
    @argument("--reset", action="store_true", help="forget the session's settings")
    @line_magic
    def hpc_resources(self, line: str = "") -> Any:
        """Show the resource request, or set the session's defaults with sbatch's flags.

        Without arguments: a table of the current request, the #SBATCH lines it renders
        to, and its cost in node-hours (GPU-hours when it asks for GPUs).

        Example::

            %hpc_resources --profile alvis --gpus-per-node A40:1 -t 2h -A NAISS2024-5-1
        """
        args = parsed_arguments(self.hpc_resources, line)
        request = self.request
        if args.reset:
            request = self._session_start()
        request = self.apply(request, args)
        self.request = request
        profile = profiles.load_profile(request.profile)
        from ..scheduler.cluster import live_wanted, with_environment

        # shown and costed with the environment's sbatch defaults, as a job gets them
        shown = with_environment(request, live_wanted(profile)[0])[0]
        return ResourceView(shown, profile, self._problems(shown, profile))

    @magic_arguments()
    @arguments_from(resource_flags)
    @argument("-J", "--name", help="job name (default: from the notebook and cell)")
    @argument("--wait", action="store_true",
              help="block until the job ends, then bring its results into the notebook")
    @argument("--dry-run", action="store_true",
              help="print the exact job script and what would be shipped; submit nothing")
    @argument("--cache", action="store_true",
              help="if this cell ran before with the same code, shipped inputs and job "
                   "environment (resources aside), return that job's result instead of "
                   "submitting")
    @arguments_from(scale_flags)
    @arguments_from(lambda: sweep_magic.SWEEP_ARGUMENTS)
    @cell_magic
    def sbatch(self, line: str, cell: str) -> Any:
        """Run this cell as a Slurm job (or locally when there is no Slurm).

        The names the cell reads are shipped (modules by name, notebook functions and
        classes by value, data pickled); the names it assigns and its last expression
        come back with ``--wait``, or later with ``%hpc_fetch``. ``#SBATCH`` lines at the
        top of the cell are read as sbatch reads them.
        """
        from ..backends import get_backend
        from ..cell_job import submit_cell
        from ..core import errors, login_paths
        from ..core.checkscript import syntax_problems
        from ..core.scale import injected_names
        from ..handle import JobHandle
        from ..jobfolder.folder import JobFolder
        from ..scheduler.cluster import live_wanted, with_environment
        from ..shipping.analysis import analyse
        from ..shipping.packing import check_defined, pack
        from . import cell_cache

        args = parsed_arguments(self.sbatch, line)
        namespace = self.shell.user_ns if self.shell else {}
        points = sweep_magic.points(args, namespace)
        parsed = directive_parser.parse(cell)
        # a --profile switch first, so the cell's own #SBATCH lines are kept
        request = resources.updated(self._switch_profile(self.request, args, parsed.values),
                                    parsed.values)
        # -d afterok:prep: this notebook's job folder names and handle variables are job ids
        args.dependency = sweep_magic.resolved_dependency(self, args.dependency)
        request = self.apply(request, args)
        if parsed.extra:
            request = request.changed(extra=tuple(request.extra) + parsed.extra)
        profile = profiles.load_profile(request.profile)
        live, not_live = live_wanted(profile)
        request, from_environment = with_environment(request, live)
        if not_live:
            print(f"[hpc_magics] {not_live}", file=sys.stderr)
        problems = syntax_problems(cell, profile) + self._problems(request, profile)
        validation.refuse(problems)  # one line (the magic's decorator makes it a UsageError)
        for warning in problems:
            print(f"[hpc_magics] {warning}", file=sys.stderr)
        backend = get_backend(request.backend)
        if request.backend == "auto" and backend.name == "local":  # never silently
            print("[hpc_magics] --backend auto: running on this machine, not on a cluster:"
                  " sbatch is not on PATH here (--backend slurm refuses instead)",
                  file=sys.stderr)
        backend.preflight(request, profile, live=live, submitting=not args.dry_run)
        options = options_from_args(args, request, backend.name)
        if backend.name == "slurm":  # nodes have their own /tmp: say so before the queue
            errors.refuse(login_paths.refusals(
                jobs_root=str(self.jobs_root), cwd=os.getcwd(), stage=options.stage,
                stage_back=options.stage_back, cell=parsed.body, environ=os.environ))
        tasks = (request.nodes or 1) * (request.ntasks_per_node or 1)
        if points and (options.active or tasks > 1):
            raise UsageError("--sweep runs each point as one single-task array task: it "
                             "does not combine with --checkpoint, --stage, --stage-back, "
                             "--gather or several tasks (-N/--ntasks-per-node) yet; "
                             "drop one of them")
        body, helpers = plain_python(parsed.body)
        names = analyse(body)
        if points:  # set per task, never shipped
            names = sweep_magic.without_parameters(names, points)
        if body != parsed.body:  # names the translation made up are not the user's results
            names = replace(names, assigned=tuple(
                n for n in names.assigned if re.search(rf"\b{re.escape(n)}\b", parsed.body)))
        else:  # translated magics read their helpers' names: only a plain cell is checked
            check_defined(body, names, namespace, provided=injected_names(options))
        payload = pack(body, names, namespace, self.max_shipped_mb)
        if helpers:  # the translated magics' helpers run first; they are not results
            payload = replace(payload, code=helpers + payload.code)
        job_name = args.name or parsed.job_name or default_job_name(self.shell)
        # rendered before any folder exists: a script that cannot be written stops here
        would_be = JobFolder.would_be(self.jobs_root, job_name)
        script = backend.job_script(str(would_be), request, profile, job_name, options)
        if points and args.cache:
            raise UsageError("--cache does not combine with --sweep yet: drop one of them")
        if points:
            return sweep_magic.run(self, args, backend, payload, request, profile, job_name,
                                   points, str(would_be))
        key = None
        if args.cache and not args.dry_run:
            key = cell_cache.cache_key(payload, script, would_be, backend.name, profile.name)
            entry = cell_cache.cached_job(self.jobs_root, key)
            if entry is not None:
                print(cell_cache.cached_message(entry))
                self.handle_for(entry["folder"]).fetch(self.shell.user_ns if self.shell else None)
                return None
        if args.dry_run:
            print_dry_run(would_be, script, backend, payload, request, profile,
                          session_request=self.request, from_environment=from_environment,
                          live=live)
            return None
        print(f"[hpc_magics] {payload.summary()}")
        job_id, folder = submit_cell(self.jobs_root, backend, payload, request, profile,
                                     job_name, options, **sent_from_meta(self.shell))
        handle = self.remember(JobHandle(job_id, backend, folder, job_name))
        if key is not None:
            cell_cache.remember(self.jobs_root, key, handle.job_id, handle.folder.path)
        from ..widgets.live_output import follow_output

        widget = show_handle(handle)
        follow_output(handle, self.shell)
        if args.wait:
            wait_and_fetch(handle, self.shell, widget, results_suffice=True)
        else:
            print(f"[hpc_magics] results later: %hpc_fetch {handle.job_id}")
        return None

    def remember(self, handle: Any) -> Any:
        """The session's newest job: %hpc_fetch and %hpc_cancel default to it."""
        self.handles[handle.job_id] = handle
        self.last_job = handle.job_id
        self._watch_reruns()
        return handle

    def _watch_reruns(self) -> None:
        """A rerun of a job this session knows becomes its newest job (the handle module
        is loaded by then: %load_ext stays cheap)."""
        from ..handle import NEW_JOB_HOOKS

        if self._rerun_made not in NEW_JOB_HOOKS:
            NEW_JOB_HOOKS.append(self._rerun_made)

    def _rerun_made(self, handle: Any) -> Any:
        """A job ``handle.rerun`` submitted: the session's newest, with a watched widget
        (the handle shows it; a Rerun button puts it under its own widget) and its output
        live under it, as the first run's under the cell's."""
        from ..widgets.live_output import live_output
        from .widget_monitor import job_widget

        self.remember(handle)
        live = live_output(handle, self.shell)  # first: the widget leaves the output to it
        widget = job_widget(handle)
        if live is not None:
            widget.show_live(live.view)
        return widget

    def handle_for(self, job: str | None) -> Any:
        from ..attach import attach

        key = resources._unquote(job) if job else self.last_job  # IPython keeps quotes
        if key is None:
            raise UsageError("no job yet in this session: give a job id (see %hpc_jobs)")
        if key in self.handles:
            return self.handles[key]
        try:
            handle = attach(key, self.jobs_root)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        self.handles[handle.job_id] = handle
        self._watch_reruns()
        if self.last_job is None:  # after a restart, the job looked at becomes the current one
            self.last_job = handle.job_id
        return handle

