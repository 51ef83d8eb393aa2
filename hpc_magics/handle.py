"""A submitted job as the notebook sees it: state, wait, fetch, cancel, logs.

Handles survive a kernel restart: everything they need is in the job folder, so
``attach(job_id)`` (or ``%hpc_fetch JOB``) builds one again from disk.
"""

from __future__ import annotations

import importlib
import pickle
import re
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fetching
from .core.errors import FETCHED_FAILURE_HOOKS, HpcMagicsError, JobFailed
from .core.jobs import SLURM_ENDED_IT, SUCCESS_STATES, is_final, normalize_state
from .jobfacts import end_reason, failed_because, suggested_rerun
from .jobfolder.files import read_tail
from .jobfolder.folder import JobFolder, damaged
from .scheduler.job_status import UNREACHABLE, JobStatus
from .scheduler.watcher import watcher
from .shipping.stream import load_results

if TYPE_CHECKING:  # submitit loads with the first backend
    from .backends.submitit_backend import Backend

ProgressCallback = Callable[["JobHandle", str, float], None]
# called with each job a rerun submits (the session remembers it as its newest job and
# makes its widget; ``magics/jobs.py``); returns that widget or None
NEW_JOB_HOOKS: list[Callable[[JobHandle], Any]] = []

# A provisional end (results seen, or gone from the queue) waits this long for sacct's word.
SETTLE_S = 5.0
# how often --wait looks for the result file in the job folder (two stats, ~10 us; no
# scheduler call): the cell's result is in the notebook at most this long after it lands
FOLDER_POLL_S = 0.02
# read at most this much of the end of each log file
LOG_TAIL_BYTES = 256 * 1024
# after a cancel, look again this often until the job ended (never a hot loop on squeue)
CANCEL_LOOK_EVERY_S = 0.5
# a line of submitit's own logger ("%(name)s %(levelname)s (%(asctime)s) - %(message)s",
# submitit/core/logger.py), not a line of the cell's that starts with the word
SUBMITIT_LOG_LINE = re.compile(r"submitit [A-Z]+ \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\) - ")


def wait_for_end(refresh: Callable[..., str], deadline: float) -> str:
    """Look until the state is final or ``deadline`` (monotonic) passed; the last state
    seen. At least one look: a budget of 0 still says what Slurm shows now."""
    while True:
        state = refresh(max_age_s=CANCEL_LOOK_EVERY_S)
        left = deadline - time.monotonic()
        if is_final(state) or left <= 0:
            return state
        time.sleep(min(CANCEL_LOOK_EVERY_S, left))


class RemoteError(JobFailed):
    """The cell raised on the node; IPython shows the node's traceback, not ours (with the
    node's frames for ``%debug``, when the job kept them: ``magics/postmortem.py``)."""

    shows_node_traceback = True

    def __init__(self, message: str, remote_traceback: str = "", job_id: str = "",
                 folder: Path | None = None) -> None:
        super().__init__(message, remote_traceback)
        self.job_id, self.folder = job_id, folder
        self.on_node: Any = None  # the node's exception and frames, rebuilt by the hook

    def _render_traceback_(self) -> list[str]:
        if not self.remote_traceback.strip():  # hpc_magics' own one line (a missing module)
            return [str(self)]
        return [*self.remote_traceback.rstrip().splitlines(), "", f"(raised in {self})"]


def no_accounting_here(job_id: str, about: str) -> str:
    """The line for asking Slurm's accounting ``about`` a job that ran on this machine:
    there is none (nothing failed: no "try again")."""
    return (f"job {job_id} ran on this machine, not through Slurm: there is no accounting "
            f"to ask for its {about}")


class JobHandle:
    """One job: ``handle.state``, ``.wait()``, ``.fetch()``, ``.cancel()``, ``.log()``,
    ``.rerun(mem=..., time=...)``."""

    def __init__(self, job_id: str, backend: Backend, folder: JobFolder, name: str = "") -> None:
        self.job_id = job_id
        self.backend = backend
        self.folder = folder
        self.name = name or folder.meta().get("name", "")
        # an array task of the folder's job (attach("123_4") on job 123's folder), else None
        self._task = None if job_id == str(folder.meta().get("job_id", job_id)) else job_id
        self._state_checked = 0.0
        self.fetched = False
        self.live: Any = None  # the cell's live output view (``widgets/live_output.py``)
        self.widget: Any = None  # a rerun's job widget, made by the session (NEW_JOB_HOOKS)

    # --------------------------------------------------------------- state
    @property
    def ran_locally(self) -> bool:
        """It ran on this machine (submitit's local executor: no Slurm here)."""
        return self.backend.name == "local"

    @property
    def status(self) -> JobStatus:
        """The watcher's latest snapshot of this job (asks nobody)."""
        return watcher().latest(self.folder, self._task)

    def refresh(self, max_age_s: float | None = None) -> str:
        """Ask the watcher for a fresh snapshot (batched and cached there)."""
        polled = watcher().poll_jobs([(self.folder, self._task)], max_age_s=max_age_s)
        self._state_checked = time.monotonic()
        return next(iter(polled.values())).state

    @property
    def state(self) -> str:
        """Slurm's state (PENDING, RUNNING, COMPLETED, ...), fresh within a second or so."""
        if not self.status.definite and time.monotonic() - self._state_checked > 1.0:
            self.refresh()
        return self.status.state

    @property
    def done(self) -> bool:
        """The job has ended, however it ended."""
        return is_final(self.state)

    # ---------------------------------------------------------------- wait
    def wait(self, timeout: float | None = None, progress: ProgressCallback | None = None,
             poll_s: float = 1.0, results_suffice: bool = False) -> str:
        """Block until the job ends; returns the final state.

        Ended means Slurm said so, or the job left the queue (results written, or gone
        from two queue views); a provisional end waits a moment for accounting's word.
        With ``results_suffice`` the result file ends the wait as soon as it appears (the
        cell is over, its job may still be tidying up: the state returned may not be final
        yet): ``%%sbatch --wait`` fetches then, without waiting for the scheduler's word.
        """
        start = time.monotonic()
        delay = 0.25
        watch_folder = results_suffice and self._task is None and self._one_task()
        while True:
            elapsed = time.monotonic() - start
            if watch_folder and self.folder.has_results():
                # the cell is over: fetch now, with the state the user's shared view says
                # (no squeue of its own: the job may still be ending, and the widget's
                # monitor shows its end; a view older than the results that still says
                # pending shows the job running, scheduler/watcher.py)
                return self.refresh()
            # someone is waiting: accept fresher shared answers early on, gentler later
            state = self.refresh(max_age_s=min(10.0, max(1.0, elapsed / 4)))
            if progress is not None:
                progress(self, state, elapsed)
            if is_final(state):
                settle_until = time.monotonic() + SETTLE_S
                while not self.status.definite and self.status.note != UNREACHABLE \
                        and time.monotonic() < settle_until:
                    if watch_folder and self.folder.has_results():
                        return state
                    time.sleep(0.5)
                    state = self.refresh(max_age_s=1.0)
                if is_final(state):
                    return state
                # seen ending, then running again (a job past its limit runs on through
                # KillWait, seen on 26.05): it has not ended yet
            if timeout is not None and elapsed > timeout:
                raise HpcMagicsError(f"job {self.job_id} is still {state} after {timeout:.0f}s")
            self._sleep(delay, watch_folder)
            delay = min(poll_s * 5, delay * 1.5)

    def _one_task(self) -> bool:
        """One task on one node: its result file means the job's work is done (with several
        tasks, task 0's results can come while the others still run)."""
        request = self.folder.meta().get("request") or {}
        extra = {str(pair[0]).lstrip("-") for pair in request.get("extra") or () if pair}
        return ((request.get("nodes") or 1) <= 1 and (request.get("ntasks_per_node") or 1) <= 1
                and not extra & {"n", "ntasks"})

    def _sleep(self, seconds: float, watch_folder: bool) -> None:
        """Sleep between scheduler polls; watching the folder, wake when results appear
        (a stat every 20 ms: the scheduler is never asked more often for it)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if watch_folder and self.folder.has_results():
                return
            time.sleep(min(FOLDER_POLL_S, left) if watch_folder else left)

    # --------------------------------------------------------------- fetch
    def fetch(self, namespace: MutableMapping[str, Any] | None = None, show: bool = True,
              results_grace_s: float = fetching.RESULTS_GRACE_S) -> dict[str, Any]:
        """Bring results back: names into ``namespace``, output printed, figures shown.

        ``results_grace_s``: how long a COMPLETED job's result file may take to appear
        (a network file system shows it late); a kernel that must not block asks for less.
        """
        if not self.folder.has_results():
            state = self.refresh()
            if not is_final(state):
                raise HpcMagicsError(f"job {self.job_id} is {state}: wait for it "
                                     f"(%hpc_fetch {self.job_id} --wait) or check later")
            if normalize_state(state) not in SUCCESS_STATES:
                raise self._failure(state, "")
            if not fetching.await_results(self.job_id, self.folder, show, results_grace_s):
                if results_grace_s < fetching.RESULTS_GRACE_S:
                    raise HpcMagicsError(
                        f"job {self.job_id} COMPLETED, but its results are not visible in "
                        f"{self.folder.path} yet (network file systems can show files late):"
                        f" %hpc_fetch {self.job_id} again in a moment, or with --wait")
                raise self._failure(state, "")
        result = self.folder.load_results()
        meta = self.folder.meta()
        # shown once: the live view in the cell takes the rest of it (in the very cell that
        # shows it, it gives way to plain output: ``widgets/live_output.py``), or as it renders
        if show and (self.live is None or self.live.finish()):
            fetching.show_outputs(fetching.written_output(self.folder))
        figures = result.figures
        if meta.get("kind") == "notebook":  # a whole-notebook job saves figures per cell
            figures = tuple(str(p.relative_to(self.folder.path))
                            for p in sorted((self.folder.path / "figures").glob("cell-*.png")))
        if show:
            fetching.show_outputs(fetching.figure_outputs(self.folder.path, figures))
            if meta.get("executed_notebook"):
                print(f"[hpc_magics] executed notebook: {meta['executed_notebook']}")
        if result.error_type is not None:
            # Slurm ending the job (time limit, cancel, memory) breaks the cell somewhere:
            # say what Slurm did, not the BrokenPipeError it caused
            ended = normalize_state(self.refresh())
            if ended in SLURM_ENDED_IT:
                raise self._failure(ended, result.remote_traceback or "")
            failure = RemoteError(f"job {self.job_id} on {result.hostname or 'the node'}: "
                                  f"{result.error_type}: {result.error_message}",
                                  result.remote_traceback or "", self.job_id,
                                  self.folder.path)
            for hook in FETCHED_FAILURE_HOOKS:
                hook(failure)
            raise failure
        notes: list[str] = []
        meanwhile = fetching.changed_meanwhile(result, namespace,
                                               meta.get("fingerprints") or {}, self.folder.path)
        try:
            values, last = load_results(
                result.state, fetching.resolver(self.job_id, result, namespace, notes, meanwhile))
        except (pickle.UnpicklingError, EOFError) as error:
            raise damaged(self.folder.results_path, error) from None
        values.update((name, importlib.import_module(module_name))
                      for name, module_name in result.modules.items())
        values.update(fetching.gathered(self.folder.path, meta, notes))
        assigned = values if namespace is None else \
            fetching.kept_in_notebook(self.job_id, result, values, meanwhile, notes)
        if namespace is not None:
            namespace.update(assigned)
        if show:
            fetching.say_what_came_back(self.job_id, result, assigned, notes)
            if result.last_value_repr is not None:
                from IPython.display import display

                display(last if result.has_last_value else result.last_value_repr)
        self.fetched = True
        self.folder.update_meta(fetched=True)
        if result.has_last_value:  # in what fetch returns, never put in the notebook
            values["_"] = last
        return values

    def segments(self) -> tuple[Any, ...]:
        """A requeued job's runs (``--checkpoint``): index, state, start, end, from
        ``sacct --duplicates``; raises when accounting cannot be asked."""
        from .scheduler.accounting import job_segments
        from .scheduler.cluster import accounting_kept

        if self.ran_locally:  # its id is a pid: sacct would answer of another job, or not
            raise HpcMagicsError(no_accounting_here(self.job_id, "segments (it ran once)"))
        found = job_segments(self.job_id)
        if found is None and accounting_kept() is False:  # no "try again" can help
            raise HpcMagicsError(f"job {self.job_id}'s segments are Slurm's accounting "
                                 "(sacct), which this cluster does not keep "
                                 "(AccountingStorageType=accounting_storage/none)")
        if found is None:
            raise HpcMagicsError(f"could not ask sacct about job {self.job_id}'s segments "
                                 "(slurmdbd unreachable): try again later")
        return found

    def _failure(self, state: str, remote: str) -> JobFailed:
        if self.backend.name == "slurm":
            state = failed_because(self.job_id, normalize_state(state))
        hint = end_reason(self.folder, self.job_id, normalize_state(state))
        message = f"job {self.job_id} has no results: {hint} (log: {self.folder.path})"
        if executed := self.folder.meta().get("executed_notebook"):
            message += f"; the cells that finished kept their outputs in {executed}"
        return JobFailed(message, remote or self.log(tail=15))

    # -------------------------------------------------------------- control
    def rerun(self, **changes: Any) -> JobHandle:
        """Submit the cell again with the same shipped state (as the job folder kept it,
        not the notebook's values now), changing the requests named by sbatch's long names:
        ``rerun(mem="12G", time="2h")``. The new job has its own folder; its meta says
        ``rerun_of``. Checked as %%sbatch checks a cell, before anything is submitted."""
        from .cell_job import rerun

        if not self.done:
            raise HpcMagicsError(f"job {self.job_id} is {self.status.state}: wait for its end, or "
                                 "cancel it, before running it again")
        job_id, folder = rerun(self.folder, self.job_id, changes)
        handle = JobHandle(job_id, self.backend, folder, self.name)
        for hook in NEW_JOB_HOOKS:
            handle.widget = hook(handle) or handle.widget
        return handle

    def suggested_rerun(self) -> dict[str, str]:
        """The changes the efficiency advice names for a rerun (``{"mem": "2G"}`` after
        OUT_OF_MEMORY, ``{"time": "2h"}`` after TIMEOUT); {} for any other end."""
        return suggested_rerun(self.folder, self.job_id, self.end_state())

    def end_state(self) -> str:
        """The state the job ended in, a FAILED one as its steps tell it (a step killed for
        memory ends OUT_OF_MEMORY)."""
        state = normalize_state(self.state)
        return failed_because(self.job_id, state) if self.backend.name == "slurm" else state

    def cancel(self, wait_s: float = 10.0) -> str:
        """Cancel the job (a sweep: every task not yet ended, in each of its arrays);
        returns its state once Slurm says it ended, or the state Slurm shows after
        ``wait_s`` seconds (a magic or a button waits under a second)."""
        deadline = time.monotonic() + wait_s
        refusals = []
        for job_id in self._cancelled_ids():
            try:
                self.backend.cancel(job_id, self.folder)
            except HpcMagicsError as error:  # a sweep's array that ended long ago, say
                refusals.append(error)
        if refusals and len(refusals) == len(self._cancelled_ids()):
            raise refusals[-1]
        return wait_for_end(self.refresh, deadline)

    def _cancelled_ids(self) -> list[str]:
        return [self.job_id]

    def log(self, tail: int = 50, rank: int = 0) -> str:
        """Last lines of the job's output and errors, submitit's own chatter left out;
        ``rank``: that task's own log, in a job of several tasks (``JOBID_RANK_log.*``).
        Only the end of each file is read: logs can be huge, and the widget reads its tail
        every few seconds."""
        lines: list[str] = []
        for path in self.backend.log_paths(self.job_id, self.folder, rank):
            try:
                chunk = read_tail(path, LOG_TAIL_BYTES)
            except OSError:
                continue
            lines += [line for line in chunk if not SUBMITIT_LOG_LINE.match(line)]
        return "\n".join(lines[-tail:])

    # -------------------------------------------------------------- display
    def summary(self) -> str:
        """One line: id, name, state, where it ran, its folder."""
        where = "ran locally (no Slurm here)" if self.ran_locally else "Slurm"
        return (f"job {self.job_id} ({self.name}) · {self.status.state} · {where} · "
                f"folder {self.folder.path}")

    def __repr__(self) -> str:
        return f"<JobHandle {self.summary()}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """A rerun's handle shows its job's widget, as %%sbatch shows a cell's (None: its
        one line, ``summary``)."""
        return self.widget._repr_mimebundle_(**kwargs) if self.widget is not None else None
