"""What the notebook does with a submitted job: show it, wait for it and fetch its
results (``%hpc_fetch``), cancel it (``%hpc_cancel``), list the jobs (``%hpc_jobs``)."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, parse_argstring

from ..core.errors import HpcMagicsError, JobFailed
from .arguments import lazy_magic_arguments as magic_arguments
from .arguments import parsed_arguments


def show_handle(handle: Any) -> Any:
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


def wait_and_fetch(handle: Any, shell: Any, widget: Any = None,
                   results_suffice: bool = False) -> None:
    """Wait for the job, then bring its results into the shell's namespace.

    ``results_suffice`` (%%sbatch --wait): fetch the moment the result file lands; the
    widget's monitor then shows the job's end."""
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
        handle.fetch(shell.user_ns if shell else None)
    except JobFailed:
        raise
    except HpcMagicsError as error:
        raise UsageError(str(error)) from None
    finally:
        if widget is not None:
            widget.render()
        if status is not None:  # never a stale "RUNNING · 1s" under a finished job
            status.update(Pretty(f"job {handle.job_id}: {handle.status.state}"))


@magics_class
class JobActionMagics(Magics):
    """``%hpc_fetch``, ``%hpc_cancel`` and ``%hpc_jobs``: they act on the jobs the
    session's ``HpcMagicsKernel`` (registered first) submitted or attaches."""

    @property
    def session(self) -> Any:
        assert self.shell is not None
        return self.shell.magics_manager.registry["HpcMagicsKernel"]

    # ------------------------------------------------------------- %hpc_fetch
    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @argument("--wait", action="store_true", help="wait for the job to end first")
    @line_magic
    def hpc_fetch(self, line: str = "") -> None:
        """Bring a job's results, output and figures into the notebook."""
        args = parsed_arguments(self.hpc_fetch, line)
        handle = self.session.handle_for(args.job)
        if args.wait:
            wait_and_fetch(handle, self.shell)
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
        args = parsed_arguments(self.hpc_cancel, line)
        try:
            handle = self.session.handle_for(args.job)
        except UsageError:
            from ..core.jobids import parse_job_id
            from ..core.resources import _unquote

            wanted = _unquote(args.job) if args.job else ""
            if parse_job_id(wanted) is None:
                raise  # not a job id at all: what handle_for said
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

        folders = [f for f in find_job_folders(self.session.jobs_root) if "job_id" in f.meta()]
        try:  # one batched poll for all of them; settled jobs are not asked again
            polled = watcher().poll(folders)
        except HpcMagicsError:
            polled = {f.path: watcher().latest(f) for f in folders}
        from .listing_notes import allocation_section, end_reason_line, ended_states

        states = ended_states(folders, polled)  # a FAILED job killed for memory: its OOM
        lines = [f"{'job':>10}  {'state':<12} {'backend':<7} name / folder"]
        for folder in folders:
            meta, status, state = folder.meta(), polled[folder.path], states[folder.path]
            if wanted is not None and state not in wanted:
                continue
            note = f" ({status.note})" if status.note else ""
            lines.append(f"{status.job_id:>10}  {state:<12} "
                         f"{meta.get('backend', ''):<7} {meta.get('name', '')}{note}")
            lines += filter(None, [end_reason_line(folder, status.job_id, state)])
        if len(lines) == 1:
            lines.append(f"(no jobs under {self.session.jobs_root})")
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
        if not away:  # the allocation, where Slurm is here and knows it
            lines += allocation_section(folders, polled, self.session.request,
                                        self.session._profile(self.session.request))
        print("\n".join(lines))
        return None
