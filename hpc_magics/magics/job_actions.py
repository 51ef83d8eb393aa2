"""What the notebook does with a submitted job: show it, wait for it and fetch its
results (``%hpc_fetch``), follow its output again (``%hpc_live``), cancel it
(``%hpc_cancel``), list the jobs (``%hpc_jobs``, whose listing is ``job_list.py``), and how
an ended one used what it asked for (``%hpc_efficiency``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, parse_argstring

from .arguments import lazy_magic_arguments as magic_arguments
from .arguments import parsed_arguments

# %hpc_efficiency waits this long for accounting's final figures (it lags a job's end)
USAGE_WAIT_S = 20.0


def waited(look: Callable[[], Any], enough: Callable[[Any], bool]) -> Any:
    """Look once a second until what ``look`` says is ``enough``, or USAGE_WAIT_S passed;
    the last look."""
    deadline = time.monotonic() + USAGE_WAIT_S
    found = look()
    while not enough(found) and time.monotonic() < deadline:
        time.sleep(1.0)
        found = look()
    return found


def show_handle(handle: Any) -> Any:
    from IPython.display import display

    from .widget_monitor import job_widget

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
    finally:
        if widget is not None:
            widget.render()
        if status is not None:  # never a stale "RUNNING · 1s" under a finished job
            status.update(Pretty(f"job {handle.job_id}: {handle.status.state}"))


@magics_class
class JobActionMagics(Magics):
    """``%hpc_fetch``, ``%hpc_live``, ``%hpc_cancel``, ``%hpc_jobs`` and ``%hpc_efficiency``:
    they act on the jobs the session's ``HpcMagicsKernel`` (registered first) submitted or
    attaches."""

    @property
    def session(self) -> Any:
        assert self.shell is not None
        return self.shell.magics_manager.registry["HpcMagicsKernel"]

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
        # without --wait, results a network file system shows late are not waited for
        handle.fetch(self.shell.user_ns if self.shell else None, results_grace_s=0.5)

    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @line_magic
    def hpc_live(self, line: str = "") -> None:
        """Show a job's output in this cell as it comes: the live view of a running job
        again, with its widget, after a kernel restart or in a reopened notebook (an ended
        job's output is shown whole). ``%hpc_fetch`` then brings its results."""
        from ..widgets.live_output import follow_output

        args = parsed_arguments(self.hpc_live, line)
        handle = self.session.handle_for(args.job)
        show_handle(handle)  # its widget's monitor follows the state, as in the %%sbatch cell
        if follow_output(handle, self.shell) is None:
            raise UsageError("the live view needs a Jupyter front end and ipywidgets: "
                             f"%hpc_fetch {handle.job_id} shows the output once the job ended")

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
            from ..scheduler.watcher import watcher

            wanted = _unquote(args.job) if args.job else ""
            if parse_job_id(wanted) is None:
                raise  # not a job id at all: what handle_for said
            try:  # a job of another tool (see %hpc_jobs --all), as squeue lists it as yours
                watcher().cancel(wanted)
            except LookupError as error:
                raise UsageError(str(error).strip("'\"")) from None
            print(f"[hpc_magics] job {wanted}: cancelled")
            return
        from ..core.jobs import is_final

        state = handle.cancel(wait_s=0)  # one look after scancel: a magic never blocks
        if is_final(state):
            print(f"[hpc_magics] job {handle.job_id}: {state}")
        else:
            shows = "Slurm shows" if handle.backend.name == "slurm" else "it shows"
            # PENDING, RUNNING or COMPLETING for a moment: no claim about processes
            print(f"[hpc_magics] job {handle.job_id}: cancel sent; {shows} {state} for now "
                  "(%hpc_jobs shows the end)")

    @magic_arguments()
    @argument("--all", action="store_true",
              help="every job of yours: other notebooks, kernels and tools too, and the ones "
                   "that ended today")
    @argument("--state", help="only jobs in these states, e.g. R,PD or COMPLETED")
    @line_magic
    def hpc_jobs(self, line: str = "") -> None:
        """The jobs in this notebook's job folder, newest first, with their states, and
        your kernels on compute nodes."""
        from .job_list import show

        args = parse_argstring(self.hpc_jobs, line)
        show(self.session, args.all, args.state)

    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @line_magic
    def hpc_efficiency(self, line: str = "") -> None:
        """How an ended job used what it asked for: CPU efficiency, peak memory against the
        request, elapsed against the limit, GPU use over time when the job recorded it,
        and one line of advice. Per task for an array."""
        from IPython.display import Image, display

        from ..core import jobs as job_states
        from ..handle import no_accounting_here
        from ..scheduler.watcher import usage_of
        from ..widgets.efficiency import gpu_plot_png, report_text, reports

        args = parse_argstring(self.hpc_efficiency, line)
        handle = self.session.handle_for(args.job)
        # Slurm has not said yet (the user's shared sacct call is due next interval), or its
        # processes have ended and the node's epilog still runs (COMPLETING, seconds): wait.
        # The first look is the queue's now: a shared view a second old may predate an end
        # accounting already shows, and its RUNNING is not Slurm's word of now
        ages = iter([0.0])
        state = waited(lambda: handle.refresh(max_age_s=next(ages, 1.0)),
                       lambda state: job_states.is_final(state) or (
                           state != "COMPLETING" and handle.status.source in ("squeue", "sacct")))
        if not job_states.is_final(state):
            raise UsageError(f"job {handle.job_id} is {state}: its efficiency is known once it "
                             f"has ended (%hpc_fetch {handle.job_id} --wait waits for it)")
        if handle.backend.name != "slurm":  # nothing wrong: say so, and let Run All go on
            print(f"[hpc_magics] {no_accounting_here(handle.job_id, 'efficiency')}")
            return
        # someone is waiting: a shared answer a second old is fresh enough; a sweep's figures
        # are its tasks' (each point's latest attempt). Figures come only once accounting has
        # settled them (the steps' peaks in, or final twice): a short job's missing memory
        # peak will not come by waiting
        found = waited(lambda: usage_of([handle], max_age_s=1.0), lambda found: bool(found.get(0)))
        usage = found.get(0)
        if not usage:
            raise UsageError(f"job {handle.job_id}: accounting has no figures for it "
                             f"{'(unreachable)' if 0 in found else 'yet'}; try again soon")
        items = reports(handle.folder, usage)
        print(report_text(items))
        png = gpu_plot_png(items, f"job {handle.job_id}")
        if png:
            display(Image(data=png, format="png"))
