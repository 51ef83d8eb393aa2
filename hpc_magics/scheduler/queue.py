"""One cached view of the user's Slurm jobs, shared by every process of the user.

``JobQueue.view()`` runs at most one ``squeue -u USER`` per interval for the whole user,
however many browser tabs, server handlers and kernels ask: the answer is kept in a JSON
file in the user's Jupyter runtime directory; the process that finds it stale takes a file
lock, checks again and only then asks. Failures back off exponentially, with jitter, while
the last good answer is served with the error beside it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..core.errors import HpcMagicsError, report_bug
from ..core.jobids import JobIndex, require_job_id
from ..core.jobs import JobSnapshot, is_final
from ..core.users import login_name
from ..jobfolder.files import read_json, write_atomically
from ..jobfolder.lock import Lock
from . import commands
from .cluster import cluster_name
from .slurm_text import SQUEUE_FORMAT, parse_squeue

DEFAULT_INTERVAL_S = 10.0
DEFAULT_TIMEOUT_S = 20.0
# Kernels and the server wait at most this long for squeue, then show the last view with
# the scheduler's silence noted: a stopped slurmctld makes squeue retry for ~8 s.
ANSWER_WITHIN_S = 0.5
# a look in flight this long is the controller's silence to a submission (which then looks
# once itself): a loaded controller answers squeue well within it, an absent one never does
UNANSWERED_AFTER_S = 5.0
SCHEDULER_SILENT = "scheduler unreachable, retrying"
MAX_BACKOFF_S = 300.0
CACHE_VERSION = 4

Runner = Callable[..., commands.CommandResult]
T = TypeVar("T")


# --------------------------------------------------------------------------- the cache files
@contextlib.contextmanager
def file_lock(cache_path: Path, timeout: float) -> Iterator[bool]:
    """An exclusive lock on ``<cache>.lock`` (``jobfolder/lock.py``: flock, or its own lock
    file where the file system has none); yields False if not had within ``timeout``.
    Shared by the queue and the accounting caches."""
    lock = Lock(cache_path.with_suffix(".lock"))
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        had = lock.acquire(timeout, poll_s=0.02 + random.random() * 0.03)
    except OSError:
        yield True  # no runtime dir, or an unlockable one: answer without sharing
        return
    try:
        yield had
    finally:
        lock.release()


def write_private_json(path: Path, text: str) -> None:
    """Replace ``path`` atomically (readers never see half a file); failures are ignored
    (a cache that cannot be written must not end the thread that refreshes it)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(path, text)


# --------------------------------------------------------------------------- the cached view


@dataclass(frozen=True)
class QueueView:
    """The user's jobs as squeue last reported them."""

    jobs: tuple[JobSnapshot, ...] = ()  # live: pending, running, completing, ...
    # over, and still remembered by the controller (``MinJobAge``, 300 s by default): the
    # only sign of a job that started and ended between two views (``squeue -t all``)
    ended: tuple[JobSnapshot, ...] = ()
    # epoch seconds at which the squeue shown was STARTED: an answer is as old as the
    # moment it was asked (one begun before a scancel may still list the job running)
    updated: float | None = None
    error: str | None = None  # one line, when the last attempt failed
    retry_at: float = 0.0  # no new squeue before this (back-off)
    failures: int = 0
    # the last invalidate() (a cancel, say): an answer asked before it is not stored as fresh
    invalidated_at: float = 0.0
    # a refresh in flight since then (cleared by its answer): a look that has not come back
    # is the first sign of an absent controller, long before squeue gives up
    asking_since: float | None = None

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


HEAD_BYTES = 4096  # the cache file's fields before its jobs fit (last_error reads only them)
_LISTS = ("jobs", "ended")  # last in the file: JobQueue.last_error reads the fields before


def _view_to_json(view: QueueView) -> str:
    values = asdict(view)
    lists = {name: values.pop(name) for name in _LISTS}
    return json.dumps({"version": CACHE_VERSION, **values, **lists})


def _view_from_json(data: Any) -> QueueView | None:
    try:
        if data.get("version") != CACHE_VERSION:
            return None
        return QueueView(**{f.name: data[f.name] for f in fields(QueueView)} | {
            name: tuple(JobSnapshot(**job) for job in data[name]) for name in _LISTS})
    except (ValueError, KeyError, TypeError, AttributeError):  # damaged, or another version's
        return None


def default_cache_dir() -> Path:
    """The user's Jupyter runtime dir: private to the user, shared by server and kernels."""
    return _runtime_dir(tuple(os.environ.get(name) for name in _RUNTIME_DIR_FROM))


# what jupyter_runtime_dir() reads; it resolves the home folder's real path every call
_RUNTIME_DIR_FROM = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS",
                     "XDG_DATA_HOME", "HOME")


@functools.lru_cache(maxsize=8)
def _runtime_dir(environment: tuple[str | None, ...]) -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir())


POLL_INTERVAL_ENV = "HPC_MAGICS_POLL_INTERVAL"


def poll_interval() -> float:
    """``HPC_MAGICS_POLL_INTERVAL`` (seconds, at least 0.5), else ``DEFAULT_INTERVAL_S``: a
    site sets it once (the hub's spawner environment); the server extension passes its
    own ``jobs_poll_interval_s`` on to the kernels it starts in the same variable."""
    try:
        return max(0.5, float(os.environ.get(POLL_INTERVAL_ENV, DEFAULT_INTERVAL_S)))
    except ValueError:
        return DEFAULT_INTERVAL_S


@dataclass
class SharedCache:
    """A command's answers in a file shared by all the user's processes (``KIND``: squeue,
    sacct), in ``cache_dir`` (None: the runtime dir), per user and per cluster (one home
    seen from two clusters keeps two)."""

    KIND: ClassVar[str] = ""
    user: str = field(default_factory=login_name)
    cluster: str = field(default_factory=cluster_name)
    interval_s: float = field(default_factory=poll_interval)
    cache_dir: Path | None = None
    runner: Runner = commands.run
    _thread_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _asking: threading.Thread | None = field(default=None, repr=False)  # a slow answer

    @property
    def cache_path(self) -> Path:
        def safe(text: str) -> str:
            return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)

        folder = default_cache_dir() if self.cache_dir is None else self.cache_dir
        return folder / f"hpc_magics-{self.KIND}-{safe(self.user)}-{safe(self.cluster)}.json"

    def _within(self, ask: Callable[[], T], wait_s: float | None, *, shared: bool = True,
                then: Callable[[T], None] | None = None) -> T | None:
        """``ask()`` (a blocking call to the scheduler) in a daemon thread, waited for
        ``wait_s`` at most (None: no limit); ``None`` if it has not answered by then: it goes
        on, and ``then(answer)`` runs in the thread once the answer is handed over.
        ``shared``: one call at a time from this process, one in flight waited for first,
        in the same ``wait_s``. An exception of ``ask`` is a bug (a command's failures are
        answers), logged even when no one waits any more."""
        deadline = None if wait_s is None else time.monotonic() + wait_s
        in_flight = self._asking
        if shared and in_flight is not None and in_flight.is_alive():
            in_flight.join(wait_s)
            if in_flight.is_alive():
                return None
        answer: list[T] = []
        failed: list[BaseException] = []

        def run() -> None:
            try:
                answer.append(ask())
                if then is not None:
                    then(answer[0])
            except Exception as error:
                failed.append(report_bug(f"reading {self.KIND}'s answer", error))

        asking = threading.Thread(target=run, name=f"hpc-magics-{self.KIND}", daemon=True)
        if shared:
            self._asking = asking
        asking.start()
        asking.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if failed:
            raise failed[0]
        return answer[0] if answer else None


@dataclass
class JobQueue(SharedCache):
    """A per-user, cross-process cached view of ``squeue -u USER``."""

    KIND: ClassVar[str] = "squeue"
    timeout_s: float = DEFAULT_TIMEOUT_S
    clock: Callable[[], float] = time.time
    # None: view() waits for squeue; else it waits this long, and squeue finishes (and
    # updates the shared cache) in a background thread
    answer_within_s: float | None = None

    def view(self, max_age_s: float | None = None) -> QueueView:
        """The cached view, refreshed first when older than ``max_age_s`` (default: interval);
        a refresh under way in another thread or process is waited for and shared."""
        max_age = self.interval_s if max_age_s is None else max_age_s
        cached = self.peek()
        if self._usable(cached, max_age):
            assert cached is not None
            return cached
        if self.answer_within_s is None:
            return self._locked_refresh(max_age)
        view = self._within(lambda: self._locked_refresh(max_age), self.answer_within_s)
        if view is not None:
            return view
        # squeue has not answered in time: it goes on in the background
        latest = self.peek() or cached
        if latest is not None and self._usable(latest, max_age):
            return latest  # another caller's squeue answered meanwhile
        return replace(latest or QueueView(), error=SCHEDULER_SILENT)

    def _locked_refresh(self, max_age: float) -> QueueView:
        with self._thread_lock, self._file_lock() as locked:
            cached = self.peek()
            if not locked or self._usable(cached, max_age):
                return cached if cached is not None else QueueView(
                    error="the job list is being refreshed by another process; try again")
            previous = replace(cached or QueueView(), asking_since=self.clock())
            # one write per refresh: the look goes on record (for last_error() in other
            # processes) only when squeue has not answered within ANSWER_WITHIN_S
            on_record = threading.Timer(ANSWER_WITHIN_S, self._write, (previous,))
            on_record.daemon = True
            on_record.start()
            view = self._refresh(previous)
            on_record.cancel()
            on_record.join()  # a write begun is over before the answer's
            self._store(view)
            return view

    def look_now(self) -> QueueView:
        """One squeue now, past any back-off, for the user's own action (a submission after
        an outage). Waits ``answer_within_s`` at most, never for a lock another refresh
        holds; its answer still fills the shared cache when it comes."""
        def store(view: QueueView) -> None:
            with self._thread_lock, self._file_lock() as locked:
                if locked:
                    self._store(view)

        view = self._within(lambda: self._refresh(self.peek() or QueueView()),
                            self.answer_within_s, shared=False, then=store)
        return view if view is not None else replace(self.peek() or QueueView(),
                                                     error=SCHEDULER_SILENT)

    def last_error(self) -> str | None:
        """Why the last look any process took failed, or SCHEDULER_SILENT while a look has
        gone unanswered past ``UNANSWERED_AFTER_S`` (None: it answered, or none yet), without
        asking the scheduler or building the user's jobs: every submission asks."""
        try:
            with self.cache_path.open("rb") as stream:
                head = stream.read(HEAD_BYTES)
                # _view_to_json writes the one-value fields first: only they are parsed, not
                # the user's jobs (a long queue made every submission parse all of it)
                cut = head.find(b', "jobs": [')
                data = json.loads(head[:cut] + b"}" if cut >= 0 else head + stream.read())
        except (OSError, ValueError):
            return None
        if not (isinstance(data, dict) and data.get("version") == CACHE_VERSION):
            return None
        if data.get("error") is not None:
            return str(data["error"])
        asking_since = data.get("asking_since")
        waited = self.clock() - asking_since if isinstance(asking_since, (int, float)) else 0.0
        return SCHEDULER_SILENT if waited > UNANSWERED_AFTER_S else None

    def invalidate(self) -> None:
        """Make the next ``view()`` ask squeue (after a cancel, say): no answer asked
        before now is stored as fresh, even one still on its way (``look_now``, another
        process's)."""
        with self._thread_lock, self._file_lock() as locked:
            cached = self.peek()
            if locked and cached is not None:
                self._write(replace(cached, updated=None, retry_at=0.0,
                                    invalidated_at=max(self.clock(), cached.invalidated_at)))

    def cancel(self, job_id: str, listed: bool = True) -> float:
        """``scancel`` one of the user's jobs (also ``123_4``, ``123_[1-5]``, ``123+0``);
        returns when scancel returned. ``listed``: it must be in this user's squeue
        (``LookupError`` otherwise); False: its job folder proves it ours."""
        job_id = str(require_job_id(job_id))
        view = self.view()
        if listed and view.find(job_id) is None and view.error is None:  # maybe newer
            # the user's own ask, off any event loop: wait for squeue's answer (up to its
            # timeout), not answer_within_s, so a slow squeue is no "not answering"
            view = self._locked_refresh(0.0)
        if view.error == commands.not_found("squeue"):  # no Slurm here: waiting will not help
            raise HpcMagicsError(f"cannot cancel job {job_id} ({view.error})")
        if view.error is not None:  # scancel would hang as long as squeue did
            raise HpcMagicsError(f"cannot cancel job {job_id} now ({view.error}): the "
                                 "scheduler is not answering; try again in a minute")
        if listed and view.find(job_id) is None:
            raise LookupError(f"job {job_id} is not one of {self.user}'s jobs in squeue")
        result = self.runner(["scancel", job_id], timeout=self.timeout_s)
        if not result.ok:
            raise HpcMagicsError(f"scancel {job_id} failed: {result.first_error_line()}")
        cancelled_at = self.clock()
        self.invalidate()
        return cancelled_at

    # ------------------------------------------------------------------ internals

    def _usable(self, view: QueueView | None, max_age: float) -> bool:
        if view is None:
            return False
        now = self.clock()
        if view.error is not None and now < view.retry_at:
            return True  # backing off: serve the last good jobs with the error
        return view.updated is not None and view.error is None and now - view.updated < max_age

    def _refresh(self, previous: QueueView) -> QueueView:
        argv = ["squeue", "-h", "-t", "all", "-u", self.user, "-o", SQUEUE_FORMAT]
        asked_at = self.clock()
        try:
            result = self.runner(argv, timeout=self.timeout_s)
            error = None if result.ok else f"squeue failed: {result.first_error_line()}"
        except HpcMagicsError as exc:
            result, error = None, str(exc)
        now = self.clock()
        if error is None and result is not None:
            listed = parse_squeue(result.stdout)
            return QueueView(jobs=tuple(j for j in listed if not is_final(j.state)),
                             ended=tuple(j for j in listed if is_final(j.state)),
                             updated=asked_at, invalidated_at=previous.invalidated_at)
        failures = previous.failures + 1
        delay = min(self.interval_s * 2 ** failures, MAX_BACKOFF_S) * random.uniform(0.8, 1.2)
        return replace(previous, error=error, failures=failures, retry_at=now + delay)

    def peek(self) -> QueueView | None:
        """The last view any process saw, without asking the scheduler."""
        return _view_from_json(read_json(self.cache_path))

    def _store(self, view: QueueView) -> None:
        """Write a refresh's answer, under the file lock; one asked before the last
        ``invalidate()`` (a cancel) is kept, never as fresh."""
        cached = self.peek()
        invalidated_at = max(view.invalidated_at, cached.invalidated_at if cached else 0.0)
        view = replace(view, invalidated_at=invalidated_at, asking_since=None)
        if view.updated is not None and view.updated < invalidated_at:
            view = replace(view, updated=None)
        self._write(view)

    def _write(self, view: QueueView) -> None:
        write_private_json(self.cache_path, _view_to_json(view))

    def _file_lock(self) -> contextlib.AbstractContextManager[bool]:
        return file_lock(self.cache_path, self.timeout_s + 5.0)
