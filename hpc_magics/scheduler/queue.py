"""One cached view of the user's Slurm jobs, and what the scheduler says about our own job.

``JobQueue.view()`` runs at most one ``squeue -u USER`` per interval for the whole user,
however many browser tabs, server handlers and kernels ask: the answer is kept in a JSON
file in the user's Jupyter runtime directory, and the process that finds it stale takes a
file lock, checks again (another process may just have refreshed it) and only then asks
the scheduler. Failures back off exponentially, with jitter, while the last good answer
keeps being served with the error beside it.

``own_job()`` describes the Slurm job this process runs in (``SLURM_JOB_ID``): its end
time comes from ``SLURM_JOB_END_TIME`` when Slurm sets it (newer releases), else from
``squeue -j`` or ``scontrol show job``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import functools
import json
import os
import pwd
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import filelock

from ..core.errors import HpcMagicsError
from ..core.jobids import JobIndex, require_job_id
from ..core.jobs import JobSnapshot, normalize_state
from ..core.units import slurm_seconds
from . import commands
from .cluster import cluster_name

DEFAULT_INTERVAL_S = 10.0
DEFAULT_TIMEOUT_S = 20.0
# Kernels and the server wait at most this long for squeue, then show the last view with
# the scheduler's silence noted: a stopped slurmctld makes squeue retry for ~8 s.
ANSWER_WITHIN_S = 0.5
SCHEDULER_SILENT = "scheduler unreachable, retrying"
MAX_BACKOFF_S = 300.0
CACHE_VERSION = 3
# flock refused by the file system (some NFS/Lustre mounts): lock with a lock file instead
NO_FLOCK_ERRNOS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})

# Fields separated by "|"; the job name goes last so a "|" inside it survives the split.
# %V: submit time, so a job id the controller reuses is never taken for an older job.
# %R: a pending job's reason, a running job's nodes. %S: the start, or for a pending job
# the scheduler's estimate (what `squeue --start` shows, so no second call is needed).
SQUEUE_FIELDS = ("%i", "%T", "%P", "%D", "%M", "%l", "%e", "%R", "%S", "%V", "%j")
SQUEUE_FORMAT = "|".join(SQUEUE_FIELDS)

Runner = Callable[..., commands.CommandResult]


# --------------------------------------------------------------------------- parsing


def slurm_duration(text: str) -> int | None:
    """Whole seconds in squeue's ``[D-][H:]M:S`` spelling; ``None`` for UNLIMITED, N/A."""
    seconds = slurm_seconds(text)
    return None if seconds is None else int(seconds)


def slurm_timestamp(text: str) -> float | None:
    """Epoch seconds from Slurm's local ``YYYY-MM-DDTHH:MM:SS``, or an epoch number."""
    value = text.strip()
    if not value or value.upper() in {"N/A", "UNKNOWN", "NONE", "(NULL)", "0"}:
        return None
    if value.isdigit():
        return float(value)
    try:
        return _dt.datetime.fromisoformat(value).timestamp()  # naive = local, as Slurm prints
    except ValueError:
        return None


def parse_squeue(text: str) -> tuple[JobSnapshot, ...]:
    """Jobs from ``squeue -h -o SQUEUE_FORMAT`` output; malformed lines are skipped."""
    jobs = []
    for line in text.splitlines():
        parts = line.split("|", len(SQUEUE_FIELDS) - 1)
        if len(parts) != len(SQUEUE_FIELDS) or not parts[0].strip():
            continue
        job_id, state, partition, nodes, elapsed, limit, end, reason_or_nodes, start, submit, \
            name = parts
        state = normalize_state(state)
        reason_or_nodes = reason_or_nodes.strip()
        if reason_or_nodes in {"None", "(null)", "(None)"}:
            reason_or_nodes = ""
        # %R: "(reason)" for a job without nodes (pending, held, SPECIAL_EXIT), else its
        # nodes, whatever the state (a STOPPED or SUSPENDED job keeps its allocation)
        waiting = (reason_or_nodes.startswith("(") and reason_or_nodes.endswith(")")) \
            or state == "PENDING"
        jobs.append(JobSnapshot(
            job_id=job_id.strip(), state=state, name=name.strip(),
            partition=partition.strip(), nodes=nodes.strip(),
            elapsed_s=slurm_duration(elapsed), time_limit_s=slurm_duration(limit),
            end_time=slurm_timestamp(end),
            reason=reason_or_nodes.strip("()") if waiting else "",
            submit_time=slurm_timestamp(submit), start_time=slurm_timestamp(start),
            node_list="" if waiting else reason_or_nodes,
        ))
    return tuple(jobs)


def _snapshot_to_dict(job: JobSnapshot) -> dict[str, Any]:
    return {"job_id": job.job_id, "state": job.state, "name": job.name,
            "partition": job.partition, "nodes": job.nodes, "elapsed_s": job.elapsed_s,
            "time_limit_s": job.time_limit_s, "end_time": job.end_time, "reason": job.reason,
            "submit_time": job.submit_time, "start_time": job.start_time,
            "node_list": job.node_list}


def _snapshot_from_dict(data: Mapping[str, Any]) -> JobSnapshot:
    return JobSnapshot(**{k: data[k] for k in _snapshot_to_dict(JobSnapshot("", "")) if k in data})


# --------------------------------------------------------------------------- the cached view


@dataclass(frozen=True)
class QueueView:
    """The user's jobs as squeue last reported them."""

    jobs: tuple[JobSnapshot, ...] = ()
    updated: float | None = None  # epoch seconds of the squeue answer shown
    error: str | None = None  # one line, when the last attempt failed
    retry_at: float = 0.0  # no new squeue before this (back-off)
    failures: int = 0

    def find(self, job_id: str) -> JobSnapshot | None:
        """The first entry of ``job_id`` (an array's task or pending range counts)."""
        return next(iter(self.find_all(job_id)), None)

    def find_all(self, job_id: str) -> tuple[JobSnapshot, ...]:
        """Every entry belonging to ``job_id``: ``123`` gets ``123_4``, ``123_[5-9]``, ``123+1``."""
        return tuple(self._index.find(job_id))

    @functools.cached_property
    def _index(self) -> JobIndex[JobSnapshot]:
        # built once per view: a sweep's thousand tasks look themselves up in it
        return JobIndex(self.jobs, lambda job: job.job_id)


def _view_to_json(view: QueueView) -> str:
    return json.dumps({"version": CACHE_VERSION, "updated": view.updated, "error": view.error,
                       "retry_at": view.retry_at, "failures": view.failures,
                       "jobs": [_snapshot_to_dict(job) for job in view.jobs]})


def _view_from_json(text: str) -> QueueView | None:
    try:
        data = json.loads(text)
        if data.get("version") != CACHE_VERSION:
            return None
        return QueueView(jobs=tuple(_snapshot_from_dict(j) for j in data["jobs"]),
                         updated=data["updated"], error=data["error"],
                         retry_at=float(data["retry_at"]), failures=int(data["failures"]))
    except (ValueError, KeyError, TypeError):
        return None


def default_cache_dir() -> Path:
    """The user's Jupyter runtime dir: private to the user, shared by server and kernels."""
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir())


def login_name() -> str:
    """The account this process runs as; ``$USER`` can be stale (``sudo``, ``su`` without -l)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # no passwd entry (some containers): the environment is all there is
        return os.environ.get("USER") or os.environ.get("LOGNAME") or str(os.getuid())


def poll_interval() -> float:
    """``HPC_MAGICS_POLL_INTERVAL`` (seconds, at least 0.5), else ``DEFAULT_INTERVAL_S``."""
    try:
        return max(0.5, float(os.environ.get("HPC_MAGICS_POLL_INTERVAL", DEFAULT_INTERVAL_S)))
    except ValueError:
        return DEFAULT_INTERVAL_S


@dataclass
class JobQueue:
    """A per-user, cross-process cached view of ``squeue -u USER``."""

    user: str = field(default_factory=login_name)
    cluster: str = field(default_factory=cluster_name)
    interval_s: float = field(default_factory=poll_interval)
    timeout_s: float = DEFAULT_TIMEOUT_S
    cache_dir: Path | None = None
    runner: Runner = commands.run
    clock: Callable[[], float] = time.time
    # None: view() waits for squeue; else it waits this long, and squeue finishes (and
    # updates the shared cache) in a background thread
    answer_within_s: float | None = None
    _thread_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _asking: threading.Thread | None = field(default=None, repr=False)

    @property
    def cache_path(self) -> Path:
        folder = self.cache_dir if self.cache_dir is not None else default_cache_dir()

        def safe(text: str) -> str:
            return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)

        # per user and per cluster: one home seen from two clusters keeps two views
        return folder / f"hpc_magics-squeue-{safe(self.user)}-{safe(self.cluster)}.json"

    def view(self, max_age_s: float | None = None) -> QueueView:
        """The cached view, refreshed first when older than ``max_age_s`` (default: interval).

        Blocks while another thread or process refreshes, then reuses its answer.
        """
        max_age = self.interval_s if max_age_s is None else max_age_s
        cached = self._read()
        if self._usable(cached, max_age):
            assert cached is not None
            return cached
        if self.answer_within_s is not None:
            return self._view_within(max_age, cached)
        return self._locked_refresh(max_age)

    def _locked_refresh(self, max_age: float) -> QueueView:
        with self._thread_lock, self._file_lock() as locked:
            cached = self._read()
            if not locked or self._usable(cached, max_age):
                return cached if cached is not None else QueueView(
                    error="the job list is being refreshed by another process; try again")
            view = self._refresh(cached or QueueView())
            self._write(view)
            return view

    def _view_within(self, max_age: float, cached: QueueView | None) -> QueueView:
        """Ask squeue in a background thread; wait ``answer_within_s`` for it, else serve
        the last view with the scheduler's silence as its error (its jobs kept)."""
        answer: list[QueueView] = []
        asking = self._asking
        if asking is None or not asking.is_alive():
            asking = threading.Thread(target=lambda: answer.append(self._locked_refresh(max_age)),
                                      name="hpc-magics-squeue", daemon=True)
            self._asking = asking
            asking.start()
        asking.join(self.answer_within_s)
        if answer:
            return answer[0]
        latest = self._read() or cached
        if latest is not None and self._usable(latest, max_age):
            return latest  # another caller's squeue answered meanwhile
        return replace(latest or QueueView(), error=SCHEDULER_SILENT)

    def look_now(self) -> QueueView:
        """One squeue now, past any back-off, for the user's own action (a submission after
        an outage). Waits ``answer_within_s`` at most, never for a lock another refresh
        holds; its answer still fills the shared cache when it comes."""
        answer: list[QueueView] = []

        def ask() -> None:
            view = self._refresh(self._read() or QueueView())
            answer.append(view)
            with self._thread_lock, self._file_lock() as locked:
                if locked:
                    self._write(view)

        asking = threading.Thread(target=ask, name="hpc-magics-squeue-now", daemon=True)
        asking.start()
        asking.join(self.answer_within_s)
        if answer:
            return answer[0]
        return replace(self._read() or QueueView(), error=SCHEDULER_SILENT)

    def peek(self) -> QueueView | None:
        """The last view any process saw, without asking the scheduler."""
        return self._read()

    def invalidate(self) -> None:
        """Make the next ``view()`` ask squeue (after a cancel, say)."""
        with self._thread_lock, self._file_lock() as locked:
            cached = self._read()
            if locked and cached is not None:
                self._write(replace(cached, updated=None, retry_at=0.0))

    def cancel(self, job_id: str) -> None:
        """``scancel`` one of the user's jobs; ``LookupError`` when it is not theirs.

        ``job_id`` may name an array task (``123_4``), a range (``123_[1-5]``) or a het
        component (``123+0``); it must match an entry of this user's ``squeue -u``.
        """
        job_id = str(require_job_id(job_id))
        view = self.view()
        if view.find(job_id) is None and view.error is None:  # maybe newer than the cache
            view = self.view(max_age_s=0)
        if view.error is not None:  # scancel would hang as long as squeue did
            raise HpcMagicsError(f"cannot cancel job {job_id} now ({view.error}): the "
                                 "scheduler is not answering; try again in a minute")
        if view.find(job_id) is None:
            raise LookupError(f"job {job_id} is not one of {self.user}'s jobs in squeue")
        result = self.runner(["scancel", job_id], timeout=self.timeout_s)
        if not result.ok:
            raise HpcMagicsError(f"scancel {job_id} failed: {result.first_error_line()}")
        self.invalidate()

    # ------------------------------------------------------------------ internals

    def _usable(self, view: QueueView | None, max_age: float) -> bool:
        if view is None:
            return False
        now = self.clock()
        if view.error is not None and now < view.retry_at:
            return True  # backing off: serve the last good jobs with the error
        return view.updated is not None and view.error is None and now - view.updated < max_age

    def _refresh(self, previous: QueueView) -> QueueView:
        argv = ["squeue", "-h", "-u", self.user, "-o", SQUEUE_FORMAT]
        try:
            result = self.runner(argv, timeout=self.timeout_s)
            error = None if result.ok else f"squeue failed: {result.first_error_line()}"
        except HpcMagicsError as exc:
            result, error = None, str(exc)
        now = self.clock()
        if error is None and result is not None:
            return QueueView(jobs=parse_squeue(result.stdout), updated=now)
        failures = previous.failures + 1
        delay = min(self.interval_s * 2 ** failures, MAX_BACKOFF_S) * random.uniform(0.8, 1.2)
        return replace(previous, error=error, failures=failures, retry_at=now + delay)

    def _read(self) -> QueueView | None:
        try:
            return _view_from_json(self.cache_path.read_text(encoding="utf-8"))
        except OSError:
            return None

    def _write(self, view: QueueView) -> None:
        write_private_json(self.cache_path, _view_to_json(view))

    def _file_lock(self) -> contextlib.AbstractContextManager[bool]:
        return file_lock(self.cache_path, self.timeout_s + 5.0)


@contextlib.contextmanager
def file_lock(cache_path: Path, timeout: float) -> Iterator[bool]:
    """An exclusive lock on ``<cache>.lock``; yields False if not had within ``timeout``.

    ``flock`` where the file system has it; where it refuses (ENOLCK, EOPNOTSUPP) a
    lock file (``<cache>.softlock``) does the same job. Shared by the queue and the
    accounting caches.
    """
    path = cache_path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        yield True  # no runtime dir: still answer, just without sharing
        return
    lock: filelock.BaseFileLock = (
        filelock.SoftFileLock(path.with_suffix(".softlock"), timeout=timeout)
        if _soft_locks_only else filelock.FileLock(path, timeout=timeout))
    try:
        lock.acquire(poll_interval=0.02 + random.random() * 0.03)
    except filelock.Timeout:
        yield False
        return
    except OSError as error:
        if error.errno not in NO_FLOCK_ERRNOS or _soft_locks_only:
            yield True  # an unlockable runtime dir: answer without sharing
            return
        _use_soft_locks()
        with file_lock(cache_path, timeout) as locked:
            yield locked
        return
    try:
        yield True
    finally:
        lock.release()


def write_private_json(path: Path, text: str) -> None:
    """Replace ``path`` atomically (readers never see half a file); failures are ignored
    (a cache that cannot be written must not end the thread that refreshes it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


_soft_locks_only = False


def _use_soft_locks() -> None:
    """Remember for this process that flock does not work where the cache lives."""
    global _soft_locks_only
    _soft_locks_only = True


# --------------------------------------------------------------------------- our own job


@dataclass(frozen=True)
class OwnJob:
    """The Slurm job the current process runs in."""

    job_id: str
    job_name: str | None = None
    partition: str | None = None
    nodes: int | None = None
    start_time: float | None = None  # epoch seconds
    end_time: float | None = None  # epoch seconds


def own_job_id(environ: Mapping[str, str] | None = None) -> str | None:
    """``SLURM_JOB_ID`` of this process's environment (never anything from a request)."""
    env = os.environ if environ is None else environ
    job_id = (env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or "").strip()
    return job_id if job_id.isdigit() else None


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


# scontrol's keys: JobId, TRES, CPUs/Task, AllocNode:Sid, MCS_label, NtasksPerN:B:S:C
_SCONTROL_KEY = re.compile(r"^[A-Z][A-Za-z0-9_/:]*$")
# The job's one-line record, as the product asks for it (own_job, %hpc_jobs' log lookup).
SCONTROL_SHOW_JOB = ("scontrol", "show", "job", "-o")


def scontrol_fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show … -o`` line. Values may hold spaces (a
    job name, ``--comment``, an output path, a node's ``Reason``): a word that does not
    start a ``Key=`` continues the value before it. The first of a repeated key wins."""
    pairs: dict[str, str] = {}
    key = None
    for word in line.split(" "):
        name, sep, value = word.partition("=")
        if sep and _SCONTROL_KEY.match(name):
            key = name if name not in pairs else None
            if key is not None:
                pairs[key] = value
        elif key is not None:
            pairs[key] += " " + word
    return {k: v.strip() for k, v in pairs.items()}


def parse_scontrol_job(text: str) -> dict[str, str]:
    """The fields of ``scontrol show job -o``: its first line (a heterogeneous job has one
    line per component; the first is the leader's)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return scontrol_fields(lines[0]) if lines else {}


def own_job(environ: Mapping[str, str] | None = None, *, runner: Runner = commands.run,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> OwnJob | None:
    """Describe this process's Slurm job, or ``None`` outside a job.

    Environment first; missing times from ``squeue -j``, then ``scontrol show job``.
    Scheduler errors leave fields ``None`` rather than failing.
    """
    env = os.environ if environ is None else environ
    job_id = own_job_id(env)
    if job_id is None:
        return None
    job = OwnJob(
        job_id=job_id,
        job_name=env.get("SLURM_JOB_NAME") or None,
        partition=env.get("SLURM_JOB_PARTITION") or None,
        nodes=_int_or_none(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")),
        start_time=slurm_timestamp(env.get("SLURM_JOB_START_TIME", "")),
        end_time=slurm_timestamp(env.get("SLURM_JOB_END_TIME", "")),
    )
    if job.end_time is not None and job.start_time is not None and job.nodes is not None:
        return job
    with contextlib.suppress(HpcMagicsError):
        result = runner(["squeue", "-h", "-j", job_id, "-o", "%S|%e|%D|%P|%j"],
                        timeout=timeout_s)
        line = result.stdout.strip().splitlines()[0] if result.ok and result.stdout.strip() \
            else ""
        if line.count("|") >= 4:
            start, end, nodes, partition, name = line.split("|", 4)
            job = _fill(job, start=slurm_timestamp(start), end=slurm_timestamp(end),
                        nodes=_int_or_none(nodes), partition=partition.strip(),
                        name=name.strip())
    if job.end_time is None:
        with contextlib.suppress(HpcMagicsError):
            result = runner([*SCONTROL_SHOW_JOB, job_id], timeout=timeout_s)
            if result.ok:
                info = parse_scontrol_job(result.stdout)
                job = _fill(job, start=slurm_timestamp(info.get("StartTime", "")),
                            end=slurm_timestamp(info.get("EndTime", "")),
                            nodes=_int_or_none(info.get("NumNodes")),
                            partition=info.get("Partition"), name=info.get("JobName"))
    return job


def _fill(job: OwnJob, *, start: float | None, end: float | None, nodes: int | None,
          partition: str | None, name: str | None) -> OwnJob:
    """Fill the fields the environment did not give; the environment wins."""
    return replace(
        job,
        start_time=job.start_time if job.start_time is not None else start,
        end_time=job.end_time if job.end_time is not None else end,
        nodes=job.nodes if job.nodes is not None else nodes,
        partition=job.partition or partition or None,
        job_name=job.job_name or name or None,
    )
