"""``%hpc_jobs``: your jobs in one listing, this notebook's or (``--all``) every one of yours.

One source: the user's one ``squeue`` view (shared by every kernel and the server) for what
is queued or running; the job folders for what each job is (this notebook's, the kernels'
and sessions' through their index, other notebooks' through the submission index); for a
job of this notebook that left the queue, the watcher's state (its shared ``sacct``); with
``--all``, the user's jobs that ended today too (one ``sacct -u`` per interval). One row
type and one table for both; in Jupyter, ``--all`` is a widget with Cancel, Log and Handle.

Beside the table: why each job Slurm ended did (the line the notebook's error and the job
widget show; one ``sacct`` for the FAILED ones' steps), and what is left of the allocation
the queued and running jobs draw on, warning when their requests add up to more (one
``sshare`` per account, cached).
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core import jobs as job_states
from ..core.cost import cost_so_far
from ..core.errors import HpcMagicsError
from ..core.jobids import same_job
from ..core.jobs import JobSnapshot
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest, from_dict
from ..core.units import format_duration
from ..jobfacts import ASKED_ABOUT, end_line, ended_because_all
from ..jobfolder.folder import JobFolder, find_job_folders
from ..scheduler.commands import slurm_available
from ..scheduler.job_index import kind_of
from ..scheduler.job_status import SCHEDULER_UNREACHABLE, JobStatus
from ..scheduler.queue import QueueView
from ..scheduler.watcher import watcher

LOOK_MAX_AGE_S = 0.5  # the user asked now: a view older than this is asked again, once
MAX_TABLE_ROWS = 200  # rows of buttons in the widget
INDENT = " " * 14  # under the state column


@dataclass(frozen=True)
class JobRow:
    """One job of the listing."""

    job_id: str
    state: str
    kind: str = ""  # cell, sweep, notebook, kernel, session; "" for another tool's job
    name: str = ""
    partition: str = ""
    elapsed: str = ""
    left: str = ""  # time left while it runs, its limit while it waits
    cost: str = ""  # so far, by its profile's billing rule
    where: str = ""  # nodes, or the pending reason
    why: str = ""  # why Slurm ended it, with the fix (core/end_reasons.py)
    note: str = ""  # e.g. "scheduler unreachable, retrying"
    folder: Any = None  # its job folder, when it has one
    # for the allocation section: what it asked for, and how long it has run
    request: Mapping[str, Any] = field(default_factory=dict, compare=False)
    elapsed_s: float | None = None
    allocation: bool = False  # a step of an allocation of yours: that job counts as itself


def wanted_states(text: str | None) -> set[str] | None:
    """``R,PD`` → {RUNNING, PENDING}; ``None`` for all."""
    if not text:
        return None
    return {job_states.normalize_state(part) for part in text.split(",") if part.strip()}


# ------------------------------------------------------------------ the one source
def _queue_view(fresh: bool) -> QueueView:
    """The user's one squeue view: the last one when Slurm is away (asking nobody) or it
    is a moment old, else one look now, waited for half a second at most."""
    queue = watcher().queue
    last = queue.peek()
    if last is not None and (last.error is not None or not fresh):
        return last
    if last is not None and last.updated is not None \
            and time.time() - last.updated <= LOOK_MAX_AGE_S:
        return last
    return queue.look_now()


def _row(job_id: str, state: str, entry: JobSnapshot | None, folder: Any = None,
         why: str = "", note: str = "", now: float = 0.0,
         meta: Mapping[str, Any] | None = None) -> JobRow:
    """The row of one job; ``meta``: its folder's, when read already (read once a listing)."""
    if meta is None:
        meta = folder.meta() if folder is not None else {}
    request = meta.get("request") or {}
    elapsed_s = entry.elapsed_s if entry is not None else None
    left = cost = where = ""
    if entry is not None and entry.phase == "running":
        where = entry.node_list or entry.nodes
        if entry.end_time:
            left = format_duration(max(0.0, entry.end_time - now))
        if meta.get("allocation"):
            cost = "(your allocation)"  # the step asked Slurm for nothing of its own
        elif request:
            cost = cost_so_far(request, elapsed_s or 0)
    elif entry is not None:
        where = entry.reason
        left = format_duration(entry.time_limit_s) if entry.time_limit_s else ""
    if meta.get("backend") == "local":
        where = "(this machine)"
    return JobRow(job_id, state, kind_of(dict(meta)) if folder is not None else "",
                  str(meta.get("name", "")) or (entry.name if entry is not None else ""),
                  entry.partition if entry is not None else "",
                  format_duration(elapsed_s) if elapsed_s else "", left, cost, where, why,
                  note, folder, request, elapsed_s, bool(meta.get("allocation")))


def queue_entries(fresh: bool = True) -> tuple[dict[str, JobSnapshot], str]:
    """The one squeue view as job id → its first entry (as ``view.find`` gives), and the
    view's error ("" when it answered)."""
    view = _queue_view(fresh)
    listed: dict[str, JobSnapshot] = {}
    for entry in view.jobs:
        listed.setdefault(entry.job_id, entry)
    return listed, view.error or ""


def kernel_folders(job_ids: Iterable[str]) -> dict[str, tuple[JobFolder, dict[str, Any]]]:
    """The kernel and session folders of these jobs and their meta, by job id, found
    through the one job index: one meta.json read per job, however many the user made."""
    from ..scheduler import job_index

    found: dict[str, tuple[JobFolder, dict[str, Any]]] = {}
    wanted = set(job_ids)
    if not wanted:
        return found
    kernels = job_index.entries(kinds=job_index.KERNEL_KINDS, job_ids=wanted)
    for folder in job_index.own_folders(reversed(kernels)):  # newest first
        meta = folder.meta()
        if meta.get("kind") == "kernel":
            found.setdefault(str(meta.get("job_id", "")), (folder, meta))
    return found


def _any_kernel() -> bool:
    from ..scheduler import job_index

    return job_index.any_entry(job_index.KERNEL_KINDS)


def ended_states(folders: Iterable[Any], polled: Mapping[Path, JobStatus]) -> dict[Path, str]:
    """Each folder's state to show: a FAILED Slurm job's as its steps tell it (a step
    killed for memory), asked in one sacct for all of them with the CANCELLED ones (who
    cancelled them); else the watcher's."""
    shown = {folder.path: polled[folder.path].state for folder in folders}
    asked = {folder.path: polled[folder.path] for folder in folders
             if polled[folder.path].state in ASKED_ABOUT
             and folder.meta().get("backend") == "slurm"}
    away = any(SCHEDULER_UNREACHABLE in (s.note or "") for s in polled.values())
    if asked and not away:  # while Slurm is away the listing asks nobody
        said = ended_because_all({status.job_id: status.state for status in asked.values()})
        shown.update((path, said[status.job_id]) for path, status in asked.items())
    return shown


def notebook_rows(folders: list[Any]) -> tuple[list[JobRow], str, bool]:
    """This notebook's jobs (one row per folder, its state from the watcher), then the
    user's kernels and sessions the queue lists. Returns the rows, a note and whether
    Slurm is away."""
    try:  # one batched poll for all of them; settled jobs are not asked again
        polled = watcher().poll(folders)
    except HpcMagicsError:
        polled = {f.path: watcher().latest(f) for f in folders}
    away = any(SCHEDULER_UNREACHABLE in (status.note or "") for status in polled.values())
    states = ended_states(folders, polled)
    listed: dict[str, JobSnapshot] = {}
    note = ""
    alive = any(not status.final for status in polled.values())
    if slurm_available() and (alive or _any_kernel()):  # else no squeue at all
        listed, note = queue_entries(fresh=not away)
    now, rows = time.time(), []
    for folder in folders:
        status, state = polled[folder.path], states[folder.path]
        rows.append(_row(status.job_id, state, status.detail or listed.get(status.job_id),
                         folder, end_line(folder, status.job_id, state) or "",
                         status.note, now))
    mine = {row.job_id for row in rows}
    for job_id, (folder, meta) in kernel_folders(j for j in listed if j not in mine).items():
        rows.append(_row(job_id, listed[job_id].state, listed[job_id], folder, now=now,
                         meta=meta))
    return rows, note, away


_RECENT: dict[str, tuple[float, Any]] = {}
_RECENT_LOCK = threading.Lock()


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


def all_rows(folders: list[Any]) -> tuple[list[JobRow], str]:
    """Every job of the user, as squeue and (for those that ended today) sacct list them,
    each with its folder where one is known. Returns the rows, newest first, and a note."""
    from ..core.end_reasons import end_note
    from ..scheduler.job_index import entries, folders_for

    view = _queue_view(fresh=True)
    notes = [view.error] if view.error else []
    # squeue and sacct list Slurm jobs: a local process of the same number is not theirs
    metas = [(f, f.meta()) for f in folders]
    by_id = {str(m.get("job_id", "")): f for f, m in metas if m.get("backend") != "local"}
    indexed = entries()
    kernels = kernel_folders({job.job_id for job in view.jobs})

    def folder_of(job_id: str) -> Any:
        # this notebook's folders, then the user's index (other notebooks)
        return by_id.get(job_id) or next(
            (f for known, f in by_id.items() if known and same_job(known, job_id)), None) \
            or next(iter(folders_for(job_id, indexed)), None)

    now, rows, seen = time.time(), [], set()
    for job in view.jobs:
        seen.add(job.job_id)
        folder, meta = kernels.get(job.job_id) or (folder_of(job.job_id), None)
        rows.append(_row(job.job_id, job.state, job, folder, now=now, meta=meta))
    recent = _recent_jobs(watcher().queue.interval_s)
    if recent is None:
        notes.append("accounting unreachable: ended jobs are not listed")
    ended = []
    for record in recent or ():
        if record.job_id in seen or not job_states.is_final(record.state):
            continue
        usage = record.usage
        folder = folder_of(record.job_id)
        why = end_line(folder, record.job_id, record.state) if folder is not None \
            else end_note(record.state)
        row = _row(record.job_id, record.state, None, folder, why or "")
        ended.append(replace(
            row, name=row.name or (usage.name if usage else ""),
            elapsed=format_duration(usage.elapsed_s) if usage and usage.elapsed_s else "",
            where=usage.node_list if usage else ""))
    return rows + sorted(ended, key=_newest_first), "; ".join(notes)


def _newest_first(row: JobRow) -> tuple[int, int]:
    base, _, task = row.job_id.partition("_")
    return (-int(base) if base.isdigit() else 0, -int(task) if task.isdigit() else 0)


# ------------------------------------------------------------------ the allocation
def _left_minutes(request_data: Mapping[str, Any], running: bool,
                  elapsed_s: float | None) -> float | None:
    """CPU-minutes a job may still use: all it asked for while it waits, the rest of its
    time while it runs (what it used is in sshare's usage already)."""
    from ..scheduler.allocation import requested_minutes

    try:
        request = from_dict(dict(request_data))
    except (HpcMagicsError, TypeError, ValueError):
        return None
    asked = requested_minutes(request)
    if asked is None or not request.time_s:
        return None
    if running and elapsed_s:
        return asked * max(0.0, 1 - elapsed_s / request.time_s)
    return asked


def allocation_section(rows: Iterable[JobRow], request: ResourceRequest,
                       profile: ClusterProfile) -> list[str]:
    """What is left for the accounts of the listed queued and running Slurm jobs (or, with
    none, of the notebook's request), and whether their requests would exceed it; nothing
    where there is no Slurm. Starts with a blank line."""
    from ..scheduler.allocation import (
        NO_ACCOUNT,
        default_account,
        queue_lines,
        site_balance_lines,
    )

    if request.backend == "local" or not slurm_available():
        return []
    if profile.balance_command:  # the site keeps balances in its own tool
        return ["", *site_balance_lines(profile)]
    wanted: dict[str | None, list[float]] = {}
    for row in rows:
        if job_states.is_final(row.state) or not row.request or row.allocation \
                or (row.folder is not None and row.folder.meta().get("backend") != "slurm"):
            continue
        left = _left_minutes(row.request, job_states.phase(row.state) == "running",
                             row.elapsed_s)
        wanted.setdefault(row.request.get("account"), []).extend([] if left is None else [left])
    if not wanted:
        wanted[request.account] = []
    if None in wanted and (default := default_account()):
        # jobs without -A go to the user's default account
        wanted.setdefault(default, []).extend(wanted.pop(None))
    lines = [""]
    for account, minutes in sorted(wanted.items(), key=lambda item: str(item[0])):
        lines += queue_lines(account, minutes) if account else [NO_ACCOUNT]
    return lines


# ------------------------------------------------------------------ showing it
HEADER = (f"{'job':>12}  {'state':<12} {'kind':<8} {'partition':<9} {'elapsed':>8} "
          f"{'left':>8}  {'cost so far':<14} {'nodes / reason':<16} name")


def rows_text(rows: list[JobRow], empty: str) -> list[str]:
    lines = [HEADER]
    for row in rows:
        note = f" ({row.note})" if row.note else ""
        lines.append(f"{row.job_id:>12}  {row.state:<12} {row.kind or '-':<8} "
                     f"{row.partition or '-':<9} {row.elapsed or '-':>8} {row.left or '-':>8}  "
                     f"{row.cost or '-':<14} {row.where or '-':<16} {row.name or '-'}{note}")
        lines += [f"{INDENT}{row.why}"] if row.why else []
    if not rows:
        lines.append(empty)
    return lines


def show(magics: Any, everything: bool, state: str | None) -> None:
    """``%hpc_jobs [--all] [--state R,PD]`` for the kernel's magics (``HpcMagicsKernel``)."""
    wanted = wanted_states(state)
    folders = [f for f in find_job_folders(magics.jobs_root) if "job_id" in f.meta()]
    if everything:
        rows, note = all_rows(folders)
        away = False
    else:
        rows, note, away = notebook_rows(folders)
    if wanted is not None:
        rows = [r for r in rows if job_states.normalize_state(r.state) in wanted]
    if everything and type(magics.shell).__name__ == "ZMQInteractiveShell":
        from IPython.display import display

        display(JobsTable(rows, note, magics).widget)
        return
    lines = rows_text(rows, "(no jobs)" if everything else f"(no jobs under {magics.jobs_root})")
    lines += [f"({note})"] if note else []
    if not away and not everything:  # the allocation, where Slurm is here and knows it
        lines += allocation_section(rows, magics.request, magics._profile(magics.request))
    print("\n".join(lines))


class JobsTable:
    """The listing as a widget: Cancel (after a confirmation), Log and Handle per job."""

    def __init__(self, rows: list[JobRow], note: str, magics: Any) -> None:
        import ipywidgets as widgets

        self.magics = magics
        self.message = widgets.HTML()
        self.log_view = widgets.HTML()
        header = widgets.HTML("<b>all your Slurm jobs</b>" + (
            f" <small>({html.escape(note)})</small>" if note else ""))
        lines = [header]
        self.buttons: dict[str, dict[str, Any]] = {}
        if len(rows) > MAX_TABLE_ROWS:
            note = f"the newest {MAX_TABLE_ROWS} of {len(rows)}: narrow with --state"
            lines.append(widgets.HTML(f"<small>({html.escape(note)})</small>"))
        for row in rows[:MAX_TABLE_ROWS]:
            text = widgets.HTML(
                f"<code>{html.escape(row.job_id)}</code> <b>{html.escape(row.state)}</b> "
                f"{html.escape(row.kind)} {html.escape(row.partition)} {html.escape(row.elapsed)} "
                f"{html.escape(row.where)} {html.escape(row.name)}"
                + (f" · <i>{html.escape(row.why)}</i>" if row.why else ""))
            mine: dict[str, Any] = {}
            if not job_states.is_final(row.state):
                mine["cancel"] = widgets.Button(description="Cancel", button_style="danger")
                mine["cancel"].on_click(lambda _, r=row: self._ask_cancel(r))
            mine["log"] = widgets.Button(description="Log")
            mine["log"].on_click(lambda _, r=row: self._log(r))
            if row.folder is not None and row.kind not in ("kernel", "session"):
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
        self.confirm_text.value = f"Cancel job <code>{html.escape(row.job_id)}</code>?"
        self.confirm.layout.display = None

    def _cancel(self) -> None:
        self.confirm.layout.display = "none"
        row = self._cancelling
        if row is None:
            return
        try:
            watcher().cancel(row.job_id)  # only the user's own, as squeue lists them
            self.message.value = f"job <code>{html.escape(row.job_id)}</code> cancelled"
        except (HpcMagicsError, LookupError) as error:
            from ..widgets.parts import error_html

            self.message.value = error_html(error)

    def _log(self, row: JobRow) -> None:
        text = job_log(row, self.magics)
        self.log_view.value = (f"<pre style='max-height:20em;overflow:auto'>"
                               f"{html.escape(text)}</pre>")

    def _handle(self, row: JobRow) -> None:
        name = "job_" + "".join(c if c.isalnum() else "_" for c in row.job_id)
        handle = self.magics.handle_for(row.job_id)
        if self.magics.shell is not None:
            self.magics.shell.user_ns[name] = handle
        self.message.value = (f"<code>{name}</code> is now in the notebook "
                              f"(<code>hpc_magics.job('{html.escape(row.job_id)}')</code>)")


def job_log(row: JobRow, magics: Any, tail: int = 60) -> str:
    """The job's log: from its folder, else the file Slurm writes it to (one ``scontrol``
    for a job of another tool, asked only when the user wants its log)."""
    if row.folder is not None and row.kind not in ("kernel", "session"):
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
