"""``%hpc_efficiency [JOB]`` and ``%hpc_jobs --all``: how a job used what it asked for, and
every job of the user (other kernels and tools too).

Both read the watcher's shared answers (the user's one ``squeue`` and one ``sacct`` per
interval); ``--all`` adds one ``sacct -u`` for the jobs that ended today, cached per interval.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, parse_argstring

from ..core.errors import HpcMagicsError
from .arguments import lazy_magic_arguments as magic_arguments
from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import jobids, units
    from ..core import jobs as job_states
else:  # imported on first use (see lazy.py)
    jobids = lazy_module("hpc_magics.core.jobids")
    job_states = lazy_module("hpc_magics.core.jobs")
    units = lazy_module("hpc_magics.core.units")

# %hpc_efficiency waits this long for accounting's final figures (it lags a job's end)
USAGE_WAIT_S = 20.0
MAX_TABLE_ROWS = 200  # rows of buttons in the --all widget


@dataclass(frozen=True)
class JobRow:
    """One line of ``%hpc_jobs --all``."""

    job_id: str
    state: str
    name: str
    partition: str
    elapsed: str
    where: str  # nodes, or the pending reason
    folder: Any = None  # this notebook's job folder, when the job has one
    why: str = ""  # why Slurm ended it, with the fix (core/end_reasons.py)


_RECENT: dict[str, tuple[float, Any]] = {}
_RECENT_LOCK = threading.Lock()


def _escape(text: str) -> str:
    import html  # loaded when a table is drawn, not at %load_ext

    return html.escape(text)


def _recent_jobs(interval_s: float) -> Any:
    """The user's jobs that ended today: one ``sacct -u`` per interval per process."""
    from ..scheduler.accounting import recent_jobs

    with _RECENT_LOCK:
        cached = _RECENT.get("recent")
        if cached is not None and time.monotonic() - cached[0] < interval_s:
            return cached[1]
        answer = recent_jobs()
        _RECENT["recent"] = (time.monotonic(), answer)
        return answer


def all_jobs(folders: list[Any]) -> tuple[list[JobRow], str]:
    """Every job of the user: the shared queue view, then today's ended jobs from sacct.
    Returns the rows, newest first, and a note (an unreachable scheduler, say)."""
    from ..scheduler.watcher import watcher

    queue = watcher().queue
    view = queue.view()
    notes = [view.error] if view.error else []
    by_id = {str(f.meta().get("job_id", "")): f for f in folders}

    from ..core.end_reasons import end_note
    from ..jobfacts import end_line
    from ..scheduler.job_index import entries, folders_for

    indexed = entries()

    def folder_of(job_id: str) -> Any:
        # this notebook's folders, then the user's index (jobs of other notebooks)
        return by_id.get(job_id) or next(
            (f for known, f in by_id.items() if known and jobids.same_job(known, job_id)), None) \
            or next(iter(folders_for(job_id, indexed)), None)

    rows: list[JobRow] = []
    seen: set[str] = set()
    for job in view.jobs:
        seen.add(job.job_id)
        where = job.node_list if job.phase == "running" else (job.reason or "")
        elapsed = units.format_duration(job.elapsed_s) if job.elapsed_s is not None else ""
        rows.append(JobRow(job.job_id, job.state, job.name, job.partition, elapsed, where,
                           folder_of(job.job_id)))
    recent = _recent_jobs(queue.interval_s)
    if recent is None:
        notes.append("accounting unreachable: ended jobs are not listed")
    ended = []
    for record in recent or ():
        if record.job_id in seen or not job_states.is_final(record.state):
            continue
        usage = record.usage
        elapsed = units.format_duration(usage.elapsed_s) if usage and usage.elapsed_s else ""
        folder = folder_of(record.job_id)
        why = end_line(folder, record.job_id, record.state) if folder is not None \
            else end_note(record.state)
        ended.append(JobRow(record.job_id, record.state, usage.name if usage else "", "",
                            elapsed, usage.node_list if usage else "", folder, why))
    return rows + sorted(ended, key=_newest_first), "; ".join(notes)


def _newest_first(row: JobRow) -> tuple[int, int]:
    base, _, task = row.job_id.partition("_")
    return (-int(base) if base.isdigit() else 0, -int(task) if task.isdigit() else 0)


def wanted_states(text: str | None) -> set[str] | None:
    """``R,PD`` → {RUNNING, PENDING}; ``None`` for all."""
    if not text:
        return None
    return {job_states.normalize_state(part) for part in text.split(",") if part.strip()}


def rows_text(rows: list[JobRow], note: str) -> str:
    lines = [f"{'job':>12}  {'state':<12} {'partition':<9} {'elapsed':>8}  "
             f"{'nodes / reason':<16} name"]
    for row in rows:
        lines.append(f"{row.job_id:>12}  {row.state:<12} {row.partition:<9} {row.elapsed:>8}  "
                     f"{row.where:<16} {row.name}")
        lines += [f"{'':>14}{row.why}"] if row.why else []
    if not rows:
        lines.append("(no jobs)")
    if note:
        lines.append(f"({note})")
    return "\n".join(lines)


def _in_a_notebook(shell: Any) -> bool:
    return type(shell).__name__ == "ZMQInteractiveShell"


class JobsTable:
    """The ``--all`` table as a widget: Cancel (after a confirmation), Log and Handle per job."""

    def __init__(self, rows: list[JobRow], note: str, magics: Any) -> None:
        import ipywidgets as widgets

        self.magics = magics
        self.message = widgets.HTML()
        self.log_view = widgets.HTML()
        header = widgets.HTML("<b>all your Slurm jobs</b>" + (
            f" <small>({_escape(note)})</small>" if note else ""))
        lines = [header]
        self.buttons: dict[str, dict[str, Any]] = {}
        if len(rows) > MAX_TABLE_ROWS:
            note = f"the newest {MAX_TABLE_ROWS} of {len(rows)}: narrow with --state"
            lines.append(widgets.HTML(f"<small>({_escape(note)})</small>"))
        for row in rows[:MAX_TABLE_ROWS]:
            text = widgets.HTML(
                f"<code>{_escape(row.job_id)}</code> <b>{_escape(row.state)}</b> "
                f"{_escape(row.partition)} {_escape(row.elapsed)} "
                f"{_escape(row.where)} {_escape(row.name)}"
                + (f" · <i>{_escape(row.why)}</i>" if row.why else ""))
            mine: dict[str, Any] = {}
            if not job_states.is_final(row.state):
                mine["cancel"] = widgets.Button(description="Cancel", button_style="danger")
                mine["cancel"].on_click(lambda _, r=row: self._ask_cancel(r))
            mine["log"] = widgets.Button(description="Log")
            mine["log"].on_click(lambda _, r=row: self._log(r))
            if row.folder is not None:
                mine["handle"] = widgets.Button(description="Handle")
                mine["handle"].on_click(lambda _, r=row: self._handle(r))
            self.buttons[row.job_id] = mine
            lines.append(widgets.HBox([text, *mine.values()]))
        self.confirm_yes = widgets.Button(description="Yes, cancel it", button_style="danger")
        self.confirm_no = widgets.Button(description="No, keep it")
        self.confirm_text = widgets.HTML()
        self.confirm = widgets.HBox([self.confirm_text, self.confirm_yes, self.confirm_no],
                                    layout=widgets.Layout(display="none"))
        self.confirm_no.on_click(lambda _: setattr(self.confirm.layout, "display", "none"))
        self.confirm_yes.on_click(lambda _: self._cancel())
        self._cancelling: JobRow | None = None
        self.widget = widgets.VBox([*lines, self.confirm, self.message, self.log_view])

    def _ask_cancel(self, row: JobRow) -> None:
        self._cancelling = row
        self.confirm_text.value = f"Cancel job <code>{_escape(row.job_id)}</code>?"
        self.confirm.layout.display = None

    def _cancel(self) -> None:
        from ..scheduler.watcher import watcher

        self.confirm.layout.display = "none"
        row = self._cancelling
        if row is None:
            return
        try:
            watcher().cancel(row.job_id)  # only the user's own, as squeue lists them
            self.message.value = f"job <code>{_escape(row.job_id)}</code> cancelled"
        except (HpcMagicsError, LookupError) as error:
            self.message.value = f"<span style='color:#c62828'>{_escape(str(error))}</span>"

    def _log(self, row: JobRow) -> None:
        text = job_log(row, self.magics)
        self.log_view.value = (f"<pre style='max-height:20em;overflow:auto'>"
                               f"{_escape(text)}</pre>")

    def _handle(self, row: JobRow) -> None:
        name = "job_" + "".join(c if c.isalnum() else "_" for c in row.job_id)
        handle = self.magics.handle_for(row.job_id)
        if self.magics.shell is not None:
            self.magics.shell.user_ns[name] = handle
        self.message.value = (f"<code>{name}</code> is now in the notebook "
                              f"(<code>hpc_magics.job('{_escape(row.job_id)}')</code>)")


def job_log(row: JobRow, magics: Any, tail: int = 60) -> str:
    """The job's log: from its folder, else the file Slurm writes it to (one ``scontrol``
    for a job of another tool, asked only when the user wants its log)."""
    if row.folder is not None:
        return magics.handle_for(row.job_id).log(tail=tail) or "(the log is empty so far)"
    from ..scheduler import commands
    from ..scheduler.slurm_text import parse_scontrol_job

    try:
        answer = commands.run(["scontrol", "show", "job", "-o", row.job_id], timeout=20)
    except HpcMagicsError as error:
        return str(error)
    path = parse_scontrol_job(answer.stdout).get("StdOut", "") if answer.ok else ""
    if not path:
        return "(Slurm no longer says where this job's log is)"
    try:
        with open(path, errors="replace") as stream:
            return "\n".join(stream.read().splitlines()[-tail:]) or "(the log is empty so far)"
    except OSError as error:
        return f"cannot read {path}: {error.strerror}"


@magics_class
class MonitorMagics(Magics):
    """``%hpc_efficiency`` and the ``--all`` part of ``%hpc_jobs``."""

    @property
    def jobs(self) -> Any:
        assert self.shell is not None
        return self.shell.magics_manager.registry["HpcMagicsKernel"]

    @magic_arguments()
    @argument("job", nargs="?", help="job id or folder name (default: the last job)")
    @line_magic
    def hpc_efficiency(self, line: str = "") -> None:
        """How an ended job used what it asked for: CPU efficiency, peak memory against the
        request, elapsed against the limit, GPU use over time when the job recorded it,
        and one line of advice. Per task for an array."""
        from ..scheduler.targets import usage_of
        from ..widgets.efficiency import gpu_plot_png, report_text, reports

        args = parse_argstring(self.hpc_efficiency, line)
        handle = self.jobs.handle_for(args.job)
        state = handle.refresh(max_age_s=1.0)
        deadline = time.monotonic() + USAGE_WAIT_S
        # Slurm has not said yet (the user's shared sacct call is due next interval): wait
        while not job_states.is_final(state) and handle.status.source not in ("squeue", "sacct") \
                and time.monotonic() < deadline:
            time.sleep(1.0)
            state = handle.refresh(max_age_s=1.0)
        if not job_states.is_final(state):
            raise UsageError(f"job {handle.job_id} is {state}: its efficiency is known once it "
                             f"has ended (%hpc_fetch {handle.job_id} --wait waits for it)")
        if handle.backend.name != "slurm":  # nothing wrong: say so, and let Run All go on
            print(f"[hpc_magics] job {handle.job_id} ran on this machine, not through Slurm: "
                  "there is no accounting to ask for its efficiency")
            return
        deadline = time.monotonic() + USAGE_WAIT_S
        usage: Any = None
        while True:
            # someone is waiting: a shared answer a second old is fresh enough; a sweep's
            # figures are its tasks' (each point's latest attempt)
            found = usage_of([handle], max_age_s=1.0)
            usage = found.get(0, usage)
            # figures come only once accounting has settled them (the steps' peaks in, or
            # final twice): a short job's missing memory peak will not come by waiting
            if usage or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        if not usage:
            raise UsageError(f"job {handle.job_id}: accounting has no figures for it "
                             f"{'(unreachable)' if 0 in found else 'yet'}; try again soon")
        items = reports(handle.folder, usage)
        print(report_text(items))
        samples = [s for _, job_samples in items for s in job_samples]
        png = gpu_plot_png(samples, f"job {handle.job_id}")
        if png:
            from IPython.display import Image, display

            display(Image(data=png, format="png"))

    def all_jobs(self, state: str | None) -> Any:
        """``%hpc_jobs --all [--state R,PD]``."""
        from ..jobfolder.folder import find_job_folders

        folders = [f for f in find_job_folders(self.jobs.jobs_root) if "job_id" in f.meta()]
        try:
            rows, note = all_jobs(folders)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        wanted = wanted_states(state)
        if wanted is not None:
            rows = [r for r in rows if job_states.normalize_state(r.state) in wanted]
        if _in_a_notebook(self.shell):
            try:
                from IPython.display import display

                display(JobsTable(rows, note, self.jobs).widget)
                return None
            except ImportError:
                pass
        print(rows_text(rows, note))
        return None
