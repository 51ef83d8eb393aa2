"""``%hpc_resources``, ``%%sbatch``, ``%hpc_fetch``, ``%hpc_jobs``, ``%hpc_cancel``."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, parse_argstring
from traitlets import Float, Unicode, default

from ..core.errors import HpcMagicsError, JobFailed
from . import sweep as sweep_magic
from .arguments import lazy_magic_arguments as magic_arguments
from .lazy import arguments_from, lazy_module
from .scale import options_from_args, scale_arguments

if TYPE_CHECKING:
    from ..core import directives as directive_parser
    from ..core import flags, jobscript, profiles, resources, sbatch, sites, validation
    from ..core.profiles import ClusterProfile
    from ..core.resources import ResourceRequest
else:  # imported on first use: %load_ext stays cheap (see lazy.py)
    directive_parser = lazy_module("hpc_magics.core.directives")
    flags = lazy_module("hpc_magics.core.flags")
    jobscript = lazy_module("hpc_magics.core.jobscript")
    profiles = lazy_module("hpc_magics.core.profiles")
    resources = lazy_module("hpc_magics.core.resources")
    sbatch = lazy_module("hpc_magics.core.sbatch")
    sites = lazy_module("hpc_magics.core.sites")
    validation = lazy_module("hpc_magics.core.validation")


def resource_flags() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """The resource arguments of %%sbatch, %hpc_resources and %hpc_submit_notebook."""
    return [
        (("--profile",), {"help": "cluster profile: " +
                          ", ".join(sorted(profiles.available_profiles()))}),
        *((flag.spellings, {"help": flag.help}) for flag in flags.SBATCH_FLAGS),
        (("--setup",), {"action": "append", "metavar": "COMMAND",
                        "help": "shell line run before the job (repeatable): 'module load X'"}),
        (("--backend",), {"choices": ["auto", "slurm", "local"],
                          "help": "slurm, local (this machine), or auto (slurm when sbatch "
                                  "exists)"}),
    ]


def __getattr__(name: str) -> Any:
    if name == "RESOURCE_FLAGS":  # the table as a list, built when asked for
        return resource_flags()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resource_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    return arguments_from(resource_flags)(function)


def values_from_args(args: Any) -> dict[str, Any]:
    """The parsed magic arguments, keyed by request field, as ``resources.updated`` takes them."""
    raw: dict[str, Any] = {flag.field: getattr(args, flag.dest, None)
                           for flag in flags.SBATCH_FLAGS}
    raw["setup"] = args.setup
    raw["backend"] = args.backend
    return raw


def _plain_python(body: str) -> tuple[str, str]:
    """A cell with IPython syntax (``!cmd``, ``%time``, ``%%bash``) as plain Python.

    Returns the translated cell and the helper code it needs; a cell that is already plain
    Python comes back unchanged, and one that is not valid either way is left for the
    syntax check to report.
    """
    import ast

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


def _sbatch_body(source: str) -> str | None:
    """The body of a ``%%sbatch`` cell, raw or as IPython's history stores it; else None."""
    import ast

    if source.lstrip().startswith("%%sbatch"):
        return source.lstrip().partition("\n")[2]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        call = tree.body[0].value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run_cell_magic" and len(call.args) == 3
                and isinstance(call.args[0], ast.Constant) and call.args[0].value == "sbatch"
                and isinstance(call.args[2], ast.Constant)
                and isinstance(call.args[2].value, str)):
            return call.args[2].value
    return None


def _arguments(magic: Callable[..., Any], line: str) -> Any:
    """The magic's parsed arguments; a bad line is one error naming it and the fix."""
    name = magic.__name__
    sign = "%%" if name == "sbatch" else "%"
    parser = magic.parser  # type: ignore[attr-defined]
    parser = parser.built() if hasattr(parser, "built") else parser  # a lazy one: build it
    parser.allow_abbrev = False  # sbatch's --gpus is not our --gpus-per-node
    try:
        return parse_argstring(magic, line)
    except ValueError as error:  # shlex: an unclosed quote
        raise UsageError(f"{sign}{name} {line.strip()}: {error}: check the quotes") from None
    except UsageError as error:
        hint = (" (flags hpc_magics does not know go in the cell as #SBATCH lines)"
                if name == "sbatch" else "")
        raise UsageError(f"{sign}{name}: {error}: see {sign}{name}? for its arguments{hint}"
                         ) from None


def _one_line(problems: list[validation.Problem]) -> str:
    if len(problems) == 1:
        return problems[0].message
    return f"{len(problems)} problems: " + "; ".join(p.message for p in problems)


class ResourceView:
    """The request as a table, its #SBATCH lines, the cost and any problems."""

    def __init__(self, request: ResourceRequest, profile: ClusterProfile,
                 problems: list[validation.Problem]) -> None:
        self.request, self.profile, self.problems = request, profile, problems
        self.header = jobscript.header_lines(request, profile)
        self.lines = [profile.shebang or jobscript.DEFAULT_SHEBANG, *self.header]
        self.cost = sbatch.cost_line(request, profile)

    def __repr__(self) -> str:
        rows = resources.as_rows(self.request)
        width = max(len(label) for label, _ in rows)
        text = [f"hpc_magics resources ({self.profile.name}: {self.profile.description})"]
        text += [f"  {label.ljust(width)}  {value}" for label, value in rows]
        text += ["", *self.lines, *([] if self.header else
                                    ["(no #SBATCH lines: the cluster's defaults apply)"]), "",
                 self.cost]
        text += [str(p) for p in self.problems]
        return "\n".join(text)

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in resources.as_rows(self.request))
        preview = html.escape("\n".join(self.lines if self.header else
                                         [*self.lines, "(cluster defaults)"]))
        problems = "".join(
            f"<div style='color:{'#c62828' if p.severity == 'error' else '#ef6c00'}'>"
            f"{html.escape(str(p))}</div>" for p in self.problems)
        return (f"<div class='hpc-magics-resources'><b>{html.escape(self.profile.name)}</b> "
                f"<span>{html.escape(self.profile.description)}</span><table>{rows}</table>"
                f"<pre>{preview}</pre><div><b>{html.escape(self.cost)}</b></div>{problems}</div>")


@magics_class
class HpcMagics(Magics):
    """Magics that run cells as Slurm jobs (or locally when there is no Slurm)."""

    jobs_dir = Unicode(
        os.environ.get("HPC_MAGICS_JOBS_DIR", "hpc_jobs"),
        help="Folder for job folders, relative to the kernel's working directory "
             "(beside the notebook).").tag(config=True)
    default_profile = Unicode(
        help="Cluster profile used until %hpc_resources --profile says otherwise (default: "
             "$HPC_MAGICS_PROFILE, else the profile of $SLURM_CLUSTER_NAME, else generic).",
    ).tag(config=True)
    python = Unicode(
        "", help="Python the job runs with; empty means this kernel's own interpreter "
                 "(it must exist on the compute nodes, as it does on a shared file system)."
    ).tag(config=True)
    max_shipped_mb = Float(
        1024.0, help="Largest state (MB, pickled) a %%sbatch cell may ship.").tag(config=True)

    @default("default_profile")
    def _default_profile(self) -> str:
        return str(sites.default_profile_name())

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._request: ResourceRequest | None = None
        self.handles: dict[str, Any] = {}
        self.last_job: str | None = None

    @property
    def request(self) -> ResourceRequest:
        """The session's request (made when first used: the core loads with it)."""
        if self._request is None:
            self._request = self._session_start()
        return self._request

    @request.setter
    def request(self, value: ResourceRequest) -> None:
        self._request = value

    def _session_start(self) -> ResourceRequest:
        """The request a session starts with, and ``--reset`` goes back to."""
        return resources.ResourceRequest(profile=self.default_profile,
                                         backend=os.environ.get("HPC_MAGICS_BACKEND", "auto"))

    # ------------------------------------------------------------- helpers
    @property
    def jobs_root(self) -> Path:
        return Path(self.jobs_dir).expanduser().resolve()

    def _switch_profile(self, request: ResourceRequest, args: Any) -> ResourceRequest:
        """The request under ``--profile``, without what named the cluster before."""
        if not getattr(args, "profile", None):
            return request
        try:
            profiles.load_profile(args.profile)  # fail now on an unknown name
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        request, dropped = resources.for_profile(request, args.profile)
        if dropped:
            print(f"[hpc_magics] profile {args.profile}: dropped {', '.join(dropped)} "
                  "(named for the cluster before; give them again if they apply)")
        return request

    def _apply(self, request: ResourceRequest, args: Any) -> ResourceRequest:
        request = self._switch_profile(request, args)
        try:
            return resources.updated(request, values_from_args(args))
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None

    def _profile(self, request: ResourceRequest) -> ClusterProfile:
        try:
            return profiles.load_profile(request.profile)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None

    def _problems(self, request: ResourceRequest) -> list[validation.Problem]:
        from ..backends import choose_backend_name
        from ..scheduler.defaults import live_wanted, with_environment

        try:
            resolved = choose_backend_name(request.backend)
            profile = self._profile(request)
            # the environment's sbatch defaults count, as sbatch will apply them
            request = with_environment(request, live_wanted(profile, None)[0])[0]
        except HpcMagicsError as error:
            return [validation.Problem(validation.ERROR, "backend", str(error))]
        return validation.check(request.changed(backend=resolved), profile)

    # ------------------------------------------------------------- %hpc_resources
    @magic_arguments()
    @resource_arguments
    @argument("--reset", action="store_true", help="forget the session's settings")
    @argument("--check", action="store_true",
              help="check a job script pasted as the cell (%%%%hpc_resources --check), or the "
                   "session's request, line by line against the profile")
    @line_cell_magic
    def hpc_resources(self, line: str = "", cell: str | None = None) -> Any:
        """Show the resource request, or set the session's defaults with sbatch's flags.

        Without arguments: a table of the current request, the #SBATCH lines it renders
        to, and its cost in node-hours (GPU-hours when it asks for GPUs).

        Example::

            %hpc_resources --profile alvis --gpus-per-node A40:1 -t 2h -A NAISS2024-5-1
        """
        args = _arguments(self.hpc_resources, line)
        if args.check:
            from .check import check_view

            view = ResourceView(self.request, self._profile(self.request), [])
            return check_view(cell if cell is not None else "\n".join(view.lines),
                              args.profile or self.request.profile)
        request = self.request
        if args.reset:
            request = self._session_start()
        request = self._apply(request, args)
        self.request = request
        profile = self._profile(request)
        from ..scheduler.defaults import live_wanted, with_environment

        try:  # shown and costed with the environment's sbatch defaults, as a job gets them
            shown = with_environment(request, live_wanted(profile, None)[0])[0]
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        return ResourceView(shown, profile, self._problems(request))

    # ------------------------------------------------------------- %%sbatch
    @magic_arguments()
    @resource_arguments
    @argument("-J", "--name", help="job name (default: from the notebook and cell)")
    @argument("--wait", action="store_true",
              help="block until the job ends, then bring its results into the notebook")
    @argument("--replay", action="store_true",
              help="ship nothing: the job rebuilds the state by running this notebook's "
                   "earlier cells (display code stripped) first; for state that does not pickle")
    @argument("--dry-run", action="store_true",
              help="print the exact job script and what would be shipped; submit nothing")
    @argument("--live", dest="live", action="store_true", default=None,
              help="check against this cluster's Slurm (partitions) even when the profile "
                   "is another cluster's; default: only when the profile is this cluster's")
    @argument("--no-live", dest="live", action="store_false", default=None,
              help="static checks only: ask this cluster nothing before submitting")
    @argument("--session", metavar="NAME", default=None,
              help="run the cell in session NAME (%%hpc_session start) instead of a new job")
    @scale_arguments
    @sweep_magic.sweep_arguments
    @cell_magic
    def sbatch(self, line: str, cell: str) -> Any:
        """Run this cell as a Slurm job (or locally when there is no Slurm).

        The names the cell reads are shipped (modules by name, notebook functions and
        classes by value, data pickled); the names it assigns and its last expression
        come back with ``--wait``, or later with ``%hpc_fetch``. ``#SBATCH`` lines at the
        top of the cell are read as sbatch reads them.
        """
        from ..core.scale import injected_names
        from ..shipping.analysis import analyse
        from ..shipping.packing import check_defined, pack

        args = _arguments(self.sbatch, line)
        if args.session:
            from .session_cell import run_in_session

            return run_in_session(self.shell, args.session, cell)
        if args.retry_failed:
            self._show_handle(sweep_magic.retry(self, cell))
            return None
        points = sweep_magic.points(args, self.shell.user_ns if self.shell else {})
        try:
            parsed = directive_parser.parse(cell)
            # a --profile switch first, so the cell's own #SBATCH lines are kept
            request = resources.updated(self._switch_profile(self.request, args), parsed.values)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        request = self._apply(request, args)
        if parsed.extra:
            request = request.changed(extra=tuple(request.extra) + parsed.extra)
        request = sweep_magic.with_dependencies(self, request, args)
        profile = self._profile(request)
        from ..scheduler.defaults import live_wanted, with_environment
        from .job_environment import sources_text

        live, not_live = live_wanted(profile, args.live)
        try:
            request, from_environment = with_environment(request, live)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        if not_live:
            print(f"[hpc_magics] {not_live}", file=sys.stderr)
        from ..core.checkscript import syntax_problems

        problems = syntax_problems(cell, profile) + self._problems(request)
        errors = validation.errors(problems)
        if errors:
            raise UsageError(_one_line(errors))
        for warning in problems:
            print(f"[hpc_magics] {warning}", file=sys.stderr)
        try:
            from ..backends import get_backend

            backend = get_backend(request.backend, python=self.python or None)
            if request.backend == "auto" and backend.name == "local":  # never silently
                print("[hpc_magics] --backend auto: running on this machine, not on a cluster:"
                      " sbatch is not on PATH here (--backend slurm refuses instead)",
                      file=sys.stderr)
            backend.preflight(request, profile, live=live)
            options = options_from_args(args, request, backend.name)
            if backend.name == "slurm":  # nodes have their own /tmp: say so before the queue
                from ..core import login_paths

                login_paths.refuse(jobs_root=str(self.jobs_root), cwd=os.getcwd(),
                                   stage=options.stage, stage_back=options.stage_back,
                                   cell=parsed.body, environ=os.environ)
            tasks = (request.nodes or 1) * (request.ntasks_per_node or 1)
            if points and (options.active or tasks > 1):
                raise UsageError("--sweep runs each point as one single-task array task: it "
                                 "does not combine with --checkpoint, --stage, --stage-back, "
                                 "--gather or several tasks (-N/--ntasks-per-node) yet; "
                                 "drop one of them")
            body, helpers = _plain_python(parsed.body)
            names = analyse(body)
            if points:  # set per task, never shipped
                names = sweep_magic.without_parameters(names, points)
            if body != parsed.body:  # names the translation made up are not the user's results
                names = replace(names, assigned=tuple(
                    n for n in names.assigned if re.search(rf"\b{re.escape(n)}\b", parsed.body)))
            if args.replay:
                payload = self._replay_payload(body, names)
            else:
                if body == parsed.body:  # translated magics read their helpers' names
                    check_defined(body, names, self.shell.user_ns if self.shell else {},
                                  provided=injected_names(options))
                payload = pack(body, names, self.shell.user_ns if self.shell else {},
                               self.max_shipped_mb)
            if helpers:  # the translated magics' helpers run first; they are not results
                payload = replace(payload, code=helpers + payload.code)
            job_name = args.name or parsed.job_name or self._default_job_name()
            # rendered before any folder exists: a script that cannot be written stops here
            from ..jobfolder.folder import JobFolder

            would_be = JobFolder.would_be(self.jobs_root, job_name)
            script = backend.job_script(str(would_be), request, profile, job_name, options)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        if points:
            return sweep_magic.run(self, args, backend, payload, request, profile, job_name,
                                   points, cell, str(would_be))
        if args.dry_run:
            print(f"# dry run: nothing submitted. The job folder would be {would_be}"
                  " (its time stamp and random part are set at submission).")
            print(script, end="")
            world = getattr(backend, "kernel_world", None)
            said = world(request, profile).said if world is not None else ()
            print(sources_text(request, self.request, from_environment, profile, script,
                               world=said), end="")
            if live and backend.name == "slurm":
                from ..scheduler.allocation import allocation_lines

                print("".join(f"# {line}\n" for line in allocation_lines(request, profile)),
                      end="")
            print(f"# {payload.summary()}")
            return None
        print(f"[hpc_magics] {payload.summary()}")
        handle = self._submit(backend, payload, request, profile, job_name, options)
        widget = self._show_handle(handle)
        if args.wait:
            self._wait_and_fetch(handle, widget, results_suffice=True)
            return None
        print(f"[hpc_magics] results later: %hpc_fetch {handle.job_id}")
        return None

    def _replay_payload(self, body: str, names: Any) -> Any:
        from ..convert.replay import replay_source
        from ..shipping.analysis import CellNames, analyse
        from ..shipping.packing import pack

        history: list[str] = []
        if self.shell is not None:
            # In[1:N] are the cells run before this one (In[N] is this cell, in a kernel)
            history = list(self.shell.user_ns.get("In", [""])[1:self.shell.execution_count])
        # Earlier %%sbatch cells may have run for hours: ship their fetched results instead
        # of running them again.
        earlier_results: list[str] = []
        replayed: list[str] = []
        for source in history:
            job_body = _sbatch_body(source)
            if job_body is None:
                replayed.append(source)
                continue
            try:
                earlier_results += [n for n in analyse(job_body).assigned
                                    if n not in earlier_results]
            except HpcMagicsError:
                continue  # it failed in the notebook too
        namespace = self.shell.user_ns if self.shell else {}
        missing = [n for n in earlier_results if n not in namespace and n in names.free]
        if missing:
            raise HpcMagicsError(
                f"{', '.join(repr(n) for n in missing)} would come from an earlier %%sbatch job "
                "whose results are not in the notebook: %hpc_fetch that job first")
        results = pack("", CellNames(tuple(n for n in earlier_results if n in namespace), (),
                                     False), namespace, self.max_shipped_mb)
        return replace(results, code=replay_source(replayed, body),
                       result_names=names.assigned,
                       capture_last_expression=names.has_final_expression,
                       replayed_cells=len(replayed))

    def _default_job_name(self) -> str:
        notebook = os.environ.get("JPY_SESSION_NAME", "")
        stem = Path(notebook).stem if notebook else "cell"
        count = getattr(self.shell, "execution_count", 0) if self.shell else 0
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{stem}-{count}")

    def _submit(self, backend: Any, payload: Any, request: ResourceRequest,
                profile: ClusterProfile, job_name: str, options: Any = None) -> Any:
        from ..handle import JobHandle

        # room for the job's files, the state and results as big again
        folder = self._new_folder(job_name, need_bytes=1_000_000 + 2 * payload.size)
        meta = {"name": job_name, "backend": backend.name, "profile": profile.name,
                "request": resources.to_dict(request), "shipped": payload.summary(),
                "results": list(payload.result_names), "notebook":
                os.environ.get("JPY_SESSION_NAME", ""), "state": "SUBMITTING"}
        if options is not None and options.active:
            meta["scale"] = options.to_dict()  # the handle reads --gather, --chain here
        try:
            folder.write_meta(meta)
            job_id = backend.submit(folder, payload, request, profile, job_name, options)
        except HpcMagicsError as error:
            folder.update_meta(state="NOT_SUBMITTED", error=str(error))
            raise UsageError(str(error)) from None
        except OSError as error:  # the backend writes nothing after sbatch but says so
            raise UsageError(f"cannot write the job folder {folder.path} ({error.strerror}), "
                             "so nothing was submitted: free some space, or set "
                             "HPC_MAGICS_JOBS_DIR to another folder") from None
        handle = JobHandle(job_id, backend, folder, job_name)
        self.handles[job_id] = handle
        self.last_job = job_id
        return handle

    def _new_folder(self, job_name: str, need_bytes: int = 0) -> Any:
        from ..jobfolder.folder import JobFolder

        try:
            return JobFolder.create(self.jobs_root, job_name, need_bytes=need_bytes)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        except OSError as error:  # a read-only or full file system: nothing is submitted
            raise UsageError(f"cannot create a job folder in {self.jobs_root}: "
                             f"{error.strerror}; set HPC_MAGICS_JOBS_DIR to a writable folder"
                             ) from None

    def _show_handle(self, handle: Any) -> Any:
        """Display the job's widget (or its summary without ipywidgets); return the widget."""
        from IPython.display import display

        try:
            from .widget_monitor import job_widget
        except ImportError:
            display(handle)
            return None
        widget = job_widget(handle)
        display(widget)
        return widget

    def _wait_and_fetch(self, handle: Any, widget: Any = None,
                        results_suffice: bool = False) -> None:
        """``results_suffice`` (%%sbatch --wait): fetch the moment the result file lands;
        the widget's monitor then shows the job's end."""
        from IPython.display import Pretty, display

        # the widget tells the story itself; without one, a line that ends in the final state
        status = None if widget is not None else display(
            Pretty(f"job {handle.job_id}: waiting"), display_id=True)

        def progress(h: Any, state: str, elapsed: float) -> None:
            if status is not None:
                status.update(Pretty(f"job {h.job_id}: {state} · {elapsed:.0f}s"))
            if widget is not None and widget.rendered_key != widget.key():
                widget.render()

        try:
            handle.wait(progress=progress, results_suffice=results_suffice)
            handle.fetch(self.shell.user_ns if self.shell else None)
        except JobFailed:
            raise
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        finally:
            if widget is not None:
                widget.render()
            if status is not None:  # never a stale "RUNNING · 1s" under a finished job
                status.update(Pretty(f"job {handle.job_id}: {handle.status.state}"))

    def _handle(self, job: str | None) -> Any:
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
        if self.last_job is None:  # after a restart, the job looked at becomes the current one
            self.last_job = handle.job_id
        return handle

    # ------------------------------------------------------------- %hpc_fetch
    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @argument("--wait", action="store_true", help="wait for the job to end first")
    @line_magic
    def hpc_fetch(self, line: str = "") -> None:
        """Bring a job's results, output and figures into the notebook."""
        args = _arguments(self.hpc_fetch, line)
        handle = self._handle(args.job)
        if args.wait:
            self._wait_and_fetch(handle)
            return
        try:  # without --wait, results a network file system shows late are not waited for
            handle.fetch(self.shell.user_ns if self.shell else None, results_grace_s=0.5)
        except JobFailed:
            raise
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None

    # ------------------------------------------------------------- %hpc_cancel
    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @line_magic
    def hpc_cancel(self, line: str = "") -> None:
        """Cancel a job: one of this notebook's (id or folder name), or any of yours by id.

        Another user's job id is refused: only jobs `squeue` lists as yours are cancelled.
        """
        args = _arguments(self.hpc_cancel, line)
        try:
            handle = self._handle(args.job)
        except UsageError:
            from ..core.jobids import parse_job_id

            wanted = resources._unquote(args.job) if args.job else ""
            if parse_job_id(wanted) is None:
                raise  # not a job id at all: what _handle said
            self._cancel_by_id(wanted)  # a job of another tool (see %hpc_jobs --all)
            return
        from ..core.jobs import is_final

        try:
            state = handle.cancel(wait_s=0)  # one look after scancel: a magic never blocks
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        if is_final(state):
            print(f"[hpc_magics] job {handle.job_id}: {state}")
        else:
            shows = "Slurm shows" if handle.backend.name == "slurm" else "it shows"
            # PENDING, RUNNING or COMPLETING for a moment: no claim about processes
            print(f"[hpc_magics] job {handle.job_id}: cancel sent; {shows} {state} for now "
                  "(%hpc_jobs shows the end)")

    def _cancel_by_id(self, job_id: str) -> None:
        from ..scheduler.watcher import watcher

        try:
            watcher().cancel(job_id)  # only one of the user's own jobs, as squeue lists them
        except (HpcMagicsError, LookupError) as error:
            raise UsageError(str(error).strip("'\"")) from None
        print(f"[hpc_magics] job {job_id}: cancelled")

    # ------------------------------------------------------------- %hpc_jobs
    @magic_arguments()
    @argument("--all", action="store_true",
              help="every job of yours: other notebooks, kernels and tools too, and the ones "
                   "that ended today; Cancel, Log and Handle buttons in Jupyter")
    @argument("--state", help="only jobs in these states, e.g. R,PD or COMPLETED")
    @line_magic
    def hpc_jobs(self, line: str = "") -> Any:
        """The jobs in this notebook's job folder, newest first, with their states."""
        from ..jobfolder.folder import find_job_folders
        from ..scheduler.watcher import watcher

        args = parse_argstring(self.hpc_jobs, line)
        if args.all and self.shell is not None:
            return self.shell.magics_manager.registry["MonitorMagics"].all_jobs(args.state)
        from .monitor import wanted_states

        wanted = wanted_states(args.state)

        folders = [f for f in find_job_folders(self.jobs_root) if "job_id" in f.meta()]
        try:  # one batched poll for all of them; settled jobs are not asked again
            polled = watcher().poll(folders)
        except HpcMagicsError:
            polled = {f.path: watcher().latest(f) for f in folders}
        lines = [f"{'job':>10}  {'state':<12} {'backend':<7} name / folder"]
        for folder in folders:
            meta, status = folder.meta(), polled[folder.path]
            if wanted is not None and status.state not in wanted:
                continue
            note = f" ({status.note})" if status.note else ""
            lines.append(f"{status.job_id:>10}  {status.state:<12} "
                         f"{meta.get('backend', ''):<7} {meta.get('name', '')}{note}")
        if len(lines) == 1:
            lines.append(f"(no jobs under {self.jobs_root})")
        from ..kernel.listing import HEADER, kernel_lines
        from ..scheduler.job_status import SCHEDULER_UNREACHABLE

        try:  # the kernels and sessions of this user that still run, with their time left
            # while Slurm is away (the poll above said so) the kernels' last view serves
            away = any(SCHEDULER_UNREACHABLE in (status.note or "") for status in polled.values())
            kernels = kernel_lines(wanted=wanted, fresh=not away)
        except (HpcMagicsError, OSError):
            kernels = []
        if kernels:
            lines += ["", "Jupyter kernels and sessions on compute nodes:", HEADER, *kernels]
        print("\n".join(lines))
        return None
