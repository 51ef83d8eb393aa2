"""``%hpc_jobs``: your jobs in one listing, this notebook's or (``--all``) every one of yours.

One function (``listing``) from one source: this notebook's job folders, each in the
watcher's state (its shared ``squeue`` view and ``sacct``); the user's one ``squeue`` view
for the other jobs of yours that are queued or running (kernels always; with
``--all`` every one), each with its folder where the one job index knows it; with
``--all``, the user's jobs that ended today too (one ``sacct -u`` per interval). One row
type, one table, the same in a notebook and a terminal.

Beside the table: why each job Slurm ended did (the line the notebook's error and the job
widget show; one ``sacct`` for the FAILED ones' steps), and what is left of the allocation
the queued and running jobs draw on, warning when their requests add up to more (one
``sshare`` per account, cached).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core import jobs as job_states
from ..core.cost import cost_so_far
from ..core.errors import HpcMagicsError, InvalidRequest
from ..core.jobids import parse_job_id, same_job, task_order
from ..core.jobs import JobSnapshot
from ..core.profiles import ClusterProfile, load_profile
from ..core.resources import ResourceRequest, _unquote, from_dict
from ..core.units import format_duration
from ..jobfacts import ASKED_ABOUT, end_line, ended_because_all
from ..jobfolder.folder import JobFolder, find_job_folders
from ..scheduler.accounting import recent_jobs
from ..scheduler.allocation import (
    NO_ACCOUNT,
    account_lines,
    default_account,
    requested_minutes,
    site_balance_line,
)
from ..scheduler.commands import slurm_available
from ..scheduler.job_index import (
    KERNEL_KINDS,
    any_entry,
    entries,
    folders_for,
    kind_of,
    own_folders,
)
from ..scheduler.job_status import JobStatus
from ..scheduler.queue import SCHEDULER_SILENT
from ..scheduler.watcher import watcher

LOOK_MAX_AGE_S = 0.5  # the user asked now: a view older than this is asked again, once
INDENT = " " * 14  # under the state column


@dataclass(frozen=True)
class JobRow:
    job_id: str
    state: str
    kind: str = ""  # cell, sweep, notebook, kernel; "" for another tool's job
    name: str = ""
    partition: str = ""
    elapsed: str = ""
    left: str = ""  # time left while it runs, its limit while it waits
    cost: str = ""  # so far, by its profile's billing rule
    where: str = ""  # nodes, or the pending reason
    why: str = ""  # why Slurm ended it, with the fix (core/jobs.py)
    note: str = ""  # e.g. "scheduler unreachable, retrying"
    folder: Any = None  # its job folder, when it has one
    # for the allocation section: what it asked for, and how long it has run
    request: Mapping[str, Any] = field(default_factory=dict, compare=False)
    elapsed_s: float | None = None
    allocation: bool = False  # a step of an allocation of yours: that job counts as itself


def wanted_states(text: str | None) -> set[str] | None:
    """``R,PD`` → {RUNNING, PENDING}; ``None`` for all (no filter, or squeue's ``all``).
    A name squeue would refuse is refused here: a typo must not read as "no such jobs"."""
    parts = [part.strip() for part in _unquote(text or "").split(",") if part.strip()]
    if not parts or any(part.lower() == "all" for part in parts):
        return None
    for part in parts:
        if job_states.normalize_state(part) not in job_states.LISTED_STATES:
            codes = ", ".join(f"{name} ({code})" for code, name in job_states.SHORT_CODES.items())
            raise InvalidRequest(
                f"--state {part!r} is not a job state: use squeue's names or codes, comma "
                f"separated: {codes}; {', '.join(job_states.OWN_STATES)}; or all")
    wanted = {job_states.normalize_state(part) for part in parts}
    # FINISHED (submitit's word for a local job that ended well) is listed as COMPLETED
    return wanted | job_states.SUCCESS_STATES if wanted & job_states.SUCCESS_STATES else wanted


# ------------------------------------------------------------------ the one source
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
    """The user's one squeue view as job id → its first entry (as ``view.find`` gives),
    and the view's error ("" when it answered): the last view when Slurm is away (asking
    nobody) or it is a moment old, else one look now, waited for half a second at most."""
    queue = watcher().queue
    view = queue.peek()
    if view is None or (view.error is None and fresh and (
            view.updated is None or time.time() - view.updated > LOOK_MAX_AGE_S)):
        view = queue.look_now()
    listed: dict[str, JobSnapshot] = {}
    for entry in view.jobs:
        listed.setdefault(entry.job_id, entry)
    return listed, view.error or ""


def kernel_folders(job_ids: Iterable[str]) -> dict[str, tuple[JobFolder, dict[str, Any]]]:
    """The kernel folders of these jobs and their meta, by job id, found
    through the one job index: one meta.json read per job, however many the user made."""
    found: dict[str, tuple[JobFolder, dict[str, Any]]] = {}
    wanted = set(job_ids)
    if not wanted:
        return found
    kernels = entries(kinds=KERNEL_KINDS, job_ids=wanted)
    for folder in own_folders(reversed(kernels)):  # newest first
        meta = folder.meta()
        if meta.get("kind") == "kernel":
            found.setdefault(str(meta.get("job_id", "")), (folder, meta))
    return found


def ended_states(folders: Iterable[Any], polled: Mapping[Path, JobStatus]) -> dict[Path, str]:
    """Each folder's state to show: a FAILED Slurm job's as its steps tell it (a step
    killed for memory), asked in one sacct for all of them with the CANCELLED ones (who
    cancelled them); else the watcher's."""
    shown = {folder.path: polled[folder.path].state for folder in folders}
    asked = {folder.path: polled[folder.path] for folder in folders
             if polled[folder.path].state in ASKED_ABOUT
             and folder.meta().get("backend") == "slurm"}
    away = any(SCHEDULER_SILENT in (s.note or "") for s in polled.values())
    if asked and not away:  # while Slurm is away the listing asks nobody
        said = ended_because_all({status.job_id: status.state for status in asked.values()})
        shown.update((path, said[status.job_id]) for path, status in asked.items())
    return shown


def listing(folders: list[Any], everything: bool = False) -> tuple[list[JobRow], str, bool]:
    """The one listing (the module's docstring says from what; ``everything``: ``--all``):
    the rows, a note and whether Slurm is away (then it asks nobody more)."""
    try:  # one batched poll for all of them; settled jobs are not asked again
        polled = watcher().poll(folders)
    except HpcMagicsError:
        polled = {f.path: watcher().latest(f) for f in folders}
    away = any(SCHEDULER_SILENT in (status.note or "") for status in polled.values())
    states = ended_states(folders, polled)
    listed: dict[str, JobSnapshot] = {}
    notes = []
    alive = any(not status.final for status in polled.values())
    here = slurm_available()  # else no squeue or sacct at all
    if here and (everything or alive or any_entry(KERNEL_KINDS)):
        listed, note = queue_entries(fresh=not away)
        notes += [note] if note else []
    now, rows = time.time(), []
    slurm_ids: dict[str, list[str]] = {}  # by base number: an array's tasks
    for folder in folders:
        status, state, meta = polled[folder.path], states[folder.path], folder.meta()
        # squeue and sacct list Slurm jobs: a local process of the same number is not theirs
        slurm = meta.get("backend") != "local"
        if slurm:
            slurm_ids.setdefault(_base(status.job_id), []).append(status.job_id)
        entry = status.detail or (listed.get(status.job_id) if slurm else None)
        rows.append(_row(status.job_id, state, entry, folder,
                         end_line(folder, status.job_id, state) or "", status.note, now, meta))

    def elsewhere(job_id: str) -> bool:  # not one of this notebook's (or a task of one)
        return not any(same_job(known, job_id) for known in slurm_ids.get(_base(job_id), ()))

    others = [job_id for job_id in listed if elsewhere(job_id)]
    kernels = kernel_folders(others)
    indexed = entries() if everything else []
    for job_id in others:
        folder, meta = kernels.get(job_id) or (None, None)
        if folder is None and not everything:
            continue
        folder = folder or next(iter(folders_for(job_id, indexed)), None)
        rows.append(_row(job_id, listed[job_id].state, listed[job_id], folder, now=now, meta=meta))
    if everything and here and not away:
        ended, note = _ended_today(lambda job_id: job_id not in listed and elsewhere(job_id),
                                   indexed)
        rows += ended
        notes += [note] if note else []
    return rows, "; ".join(notes), away


def _base(job_id: str) -> str:
    parsed = parse_job_id(job_id)
    return parsed.base if parsed is not None else job_id


_RECENT: list[tuple[float, Any]] = []  # (when, answer): the last sacct -u


def _recent_jobs(interval_s: float) -> Any:
    """The user's jobs that ended today: one ``sacct -u`` per interval per process (the
    kernel runs one %hpc_jobs at a time)."""
    if not _RECENT or time.monotonic() - _RECENT[0][0] >= interval_s:
        _RECENT[:] = [(time.monotonic(), recent_jobs())]
    return _RECENT[0][1]


def _ended_today(wanted: Callable[[str], bool], indexed: list[Any]) -> tuple[list[JobRow], str]:
    """The rows of the user's jobs that ended today and are ``wanted``, newest first."""
    recent = _recent_jobs(watcher().queue.interval_s)
    if recent is None:
        return [], "accounting unreachable: ended jobs are not listed"
    # the index by base id once: a look-up per record through the whole index was records x
    # entries id parses (a user with thousands of jobs today: minutes)
    by_base: dict[str, list[Any]] = {}
    for entry in indexed:
        by_base.setdefault(_base(entry.job_id), []).append(entry)
    ended = []
    for record in recent:
        if not wanted(record.job_id) or not job_states.is_final(record.state):
            continue
        usage = record.usage
        folder = next(iter(folders_for(record.job_id, by_base.get(_base(record.job_id), []))), None)
        why = end_line(folder, record.job_id, record.state) if folder is not None \
            else job_states.end_note(record.state)
        row = _row(record.job_id, record.state, None, folder, why or "")
        ended.append(replace(
            row, name=row.name or (usage.name if usage else ""),
            elapsed=format_duration(usage.elapsed_s) if usage and usage.elapsed_s else "",
            where=usage.node_list if usage else ""))
    return sorted(ended, key=lambda row: task_order(row.job_id), reverse=True), ""


# ------------------------------------------------------------------ the allocation
def _left_minutes(request_data: Mapping[str, Any], running: bool,
                  elapsed_s: float | None) -> float | None:
    """CPU-minutes a job may still use: all it asked for while it waits, the rest of its
    time while it runs (what it used is in sshare's usage already)."""
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
    if request.backend == "local" or not slurm_available():
        return []
    if profile.balance_command:  # the site keeps balances in its own tool
        return ["", site_balance_line(profile)]
    wanted: dict[str | None, list[float]] = {}
    for row in rows:
        if job_states.is_final(row.state) or not row.request or row.allocation \
                or (row.folder is not None and row.folder.meta().get("backend") != "slurm"):
            continue
        left = _left_minutes(row.request, job_states.phase(row.state) == "running", row.elapsed_s)
        wanted.setdefault(row.request.get("account"), []).extend([] if left is None else [left])
    if not wanted:
        wanted[request.account] = []
    if None in wanted and (default := default_account()):
        # jobs without -A go to the user's default account
        wanted.setdefault(default, []).extend(wanted.pop(None))
    lines = [""]
    for account, minutes in sorted(wanted.items(), key=lambda item: str(item[0])):
        lines += account_lines(account, minutes) if account else [NO_ACCOUNT]
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
    rows, note, away = listing(folders, everything)
    empty = "(no jobs)" if everything else f"(no jobs under {magics.jobs_root})"
    if wanted is not None:
        kept = [r for r in rows if job_states.normalize_state(r.state) in wanted]
        if rows and not kept:  # the folder is not empty: the filter kept none
            named = _unquote(str(state)).upper()
            empty = f"(no jobs in state {named}: {len(rows)} in other states)"
        rows = kept
    lines = rows_text(rows, empty)
    lines += [f"({note})"] if note else []
    if not away:  # the allocation, where Slurm is here and knows it
        lines += allocation_section(rows, magics.request, load_profile(magics.request.profile))
    print("\n".join(lines))
