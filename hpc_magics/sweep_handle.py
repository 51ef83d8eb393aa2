"""A sweep as the notebook sees it: one handle for all tasks, their states and a table.

``handle.table()`` is a pandas DataFrame when pandas is installed (else a list of dicts):
one row per point, with its parameters, each result name, ``state``, ``elapsed`` (seconds
the cell ran) and ``error`` (the node's traceback of a task that raised).
``handle.rerun(mem="4G")`` submits the failed tasks again as one new array in the same job
folder; their new results replace the failed ones in the table.

States come from the watcher: one batched poll for every task (``123_4``) of every array.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from .core.errors import HpcMagicsError
from .core.jobs import SUCCESS_STATES
from .core.sweep import Point, task_job_ids
from .fetching import shell_namespace
from .handle import JobHandle
from .jobfolder.files import RESULTS_FILE, CellResult, Outcome, load_own, read_outcome
from .jobfolder.tasks import POINTS_FILE, task_dir
from .scheduler.job_status import JobStatus, combined_state
from .scheduler.watcher import Watcher, watcher
from .shipping.stream import load_results

STATE, ELAPSED, ERROR = "state", "elapsed", "error"
SHOWN_ROWS = 20  # of the table shown in a widget or written into a notebook


class SweepHandle(JobHandle):
    """A sweep's job: ``.table()``, ``.rerun(mem=...)`` (its failed tasks),
    ``.task_states()``, plus the job
    handle's ``.wait()``, ``.cancel()`` (the whole sweep), ``.log()`` (one task's)."""

    # ------------------------------------------------------------ bookkeeping
    def _sweep(self) -> dict[str, Any]:
        sweep: dict[str, Any] = self.folder.meta().get("sweep", {})
        return sweep

    def task_ids(self) -> dict[int, str]:
        """Point index → Slurm id of its latest attempt."""
        return task_job_ids(self._sweep().get("arrays", []))

    def array_ids(self) -> list[str]:
        """The Slurm ids of the sweep's arrays (several when split or retried)."""
        return [str(a["job_id"]) for a in self._sweep().get("arrays", [])]

    def points(self) -> list[Point]:
        """The sweep's points, one dict of values per task, in task order."""
        points: list[Point] = load_own(self.folder.path / POINTS_FILE)
        return points

    def poll_targets(self) -> list[tuple[Any, str | None]]:
        """What a monitor polls for this handle: every task, in one batch."""
        return [(self.folder, job_id) for job_id in self.task_ids().values()]

    # ------------------------------------------------------------ states
    def task_states(self, ask: bool = True, max_age_s: float | None = None
                    ) -> dict[int, JobStatus]:
        """Point index → the watcher's snapshot of its task (``ask``: one batched poll)."""
        if ask:
            return asked_task_states(watcher(), self.folder, max_age_s)
        ids = self.task_ids()
        latest = watcher().latest_jobs([(self.folder, job_id) for job_id in ids.values()])
        return dict(zip(ids, latest, strict=True))

    def _combined(self, statuses: dict[int, JobStatus]) -> JobStatus:
        states = [s.state for s in statuses.values()]
        definite = bool(statuses) and all(s.definite for s in statuses.values())
        return JobStatus(self.job_id, combined_state(states) if states else "UNKNOWN",
                         "sacct" if definite else "tasks")

    @property
    def status(self) -> JobStatus:
        """The sweep's state, combined from its tasks' latest snapshots (asks nobody)."""
        return self._combined(self.task_states(ask=False))

    def refresh(self, max_age_s: float | None = None) -> str:
        state = self._combined(self.task_states(ask=True, max_age_s=max_age_s)).state
        self._state_checked = time.monotonic()
        return state

    _cancelled_ids = array_ids  # whole arrays: every task not yet ended

    # ------------------------------------------------------------ results
    def table(self, namespace: MutableMapping[str, Any] | None = None, ask: bool = True) -> Any:
        """The results table (a pandas DataFrame when pandas is installed)."""
        notebook = shell_namespace() if namespace is None else namespace

        def resolve(name: str) -> Any:
            if notebook is None or name not in notebook:
                raise HpcMagicsError(f"a result refers to the notebook's {name!r}, which it "
                                     "no longer has: define it again, then ask again")
            return notebook[name]

        return sweep_table(self.folder, self.task_states(ask=ask), resolve)

    def fetch(self, namespace: MutableMapping[str, Any] | None = None,
              show: bool = True, results_grace_s: float = 0.0) -> dict[str, Any]:
        """A sweep's results are its table (``.table()``): shown; no name is set.
        (``results_grace_s``: each task's results are read as they are, never waited for.)"""
        if not self.done:
            raise HpcMagicsError(f"sweep {self.job_id} is {self.state}: wait for it "
                                 f"(%hpc_fetch {self.job_id} --wait) or look at "
                                 "hpc_magics.job().table() for the tasks done so far")
        table = self.table(namespace, ask=False)
        if show:
            from IPython.display import display

            display(table)
        self.fetched = True
        self.folder.update_meta(fetched=True)
        return {}

    def failed_tasks(self, ask: bool = True) -> list[int]:
        """Points whose latest attempt ended without success (``ask``: a fresh poll)."""
        return sorted(index for index, status in self.task_states(ask).items()
                      if status.final and status.state not in SUCCESS_STATES)

    def rerun(self, **changes: Any) -> SweepHandle:
        """Submit the failed tasks again, as one new array in this sweep, with ``changes`` to
        the request (``mem="4G"``, ``time="2h"``, checked as %%sbatch checks them); the
        table merges their new results (the new array's id: ``array_ids()[-1]``). To sweep
        every point anew, run the cell again."""
        from .backends import sweep as sweep_backend
        from .cell_job import changed_request, checked
        from .core.profiles import load_profile
        from .core.resources import to_dict
        from .scheduler import limits

        failed = self.failed_tasks()
        if not failed:
            raise HpcMagicsError(f"sweep {self.job_id} has no failed tasks to retry")
        meta = self.folder.meta()
        sweep = meta.get("sweep", {})
        request = changed_request(meta, changes)
        if changes:
            checked(request, load_profile(request.profile), self.backend)
        attempt = 1 + max(int(a.get("attempt", 0)) for a in sweep.get("arrays", []))
        scripts = sweep_backend.plan(self.backend, str(self.folder.path), request,
                                     load_profile(request.profile), self.name, failed,
                                     sweep.get("parallelism"), limits.max_array_size(),
                                     retry=attempt)
        sweep_backend.resubmit(self.folder, scripts, self.points(), request, attempt)
        if changes:  # the sweep's request now: a later retry grows from it
            self.folder.update_meta(request=to_dict(request))
        self.fetched = False
        return self

    def log(self, tail: int = 50, task: int | None = None) -> str:
        """The log of one task: ``task`` (a point's index), else the first failed, else 0."""
        ids = self.task_ids()
        if task is None:
            failed = self.failed_tasks(ask=False)
            task = failed[0] if failed else min(ids, default=0)
        if task not in ids:
            raise HpcMagicsError(f"the sweep has no task {task}: use 0 to {len(ids) - 1}")
        text = JobHandle(ids[task], self.backend, self.folder, self.name).log(tail)
        return f"(task {task}, job {ids[task]})\n{text}"

    # ------------------------------------------------------------ display
    def summary(self) -> str:
        """One line: the number of tasks, then the job's summary."""
        count = self._sweep().get("count", 0)
        return f"sweep of {count} tasks · " + super().summary()


def asked_task_states(look: Watcher, folder: Any, max_age_s: float | None = None
                      ) -> dict[int, JobStatus]:
    """Point index → ``look``'s fresh snapshot of its task: one batched poll."""
    ids = task_job_ids(folder.meta().get("sweep", {}).get("arrays", []))
    polled = look.poll_jobs([(folder, job_id) for job_id in ids.values()], max_age_s)
    by_id = {status.job_id: status for status in polled.values()}
    return {index: by_id.get(job_id) or look.latest(folder, job_id)
            for index, job_id in ids.items()}


def sweep_table(folder: Any, states: dict[int, JobStatus],
                resolve: Callable[[str], Any] | None) -> Any:
    """The results table of the sweep in ``folder`` (``assemble_rows``: ``resolve``)."""
    meta = folder.meta()
    parameters = list(meta.get("sweep", {}).get("parameters", []))
    points: list[Point] = load_own(folder.path / POINTS_FILE)
    rows, names = assemble_rows(folder.path, points, states, resolve)
    # the cell's result names in its order, those that came back (not modules)
    results = [n for n in meta.get("results", []) if n in names and n not in parameters]
    results += [n for n in names if n not in results and n not in parameters]
    return as_table(rows, [*parameters, *results, STATE, ELAPSED, ERROR])


def _task_result(folder: Any, index: int) -> tuple[CellResult | None, Outcome | None, str]:
    """A task's results, its outcome, and why its results do not load ("" when they do,
    or when it has none yet): one damaged task never hides the others."""
    target = task_dir(folder, index)
    outcome = read_outcome(target)
    if outcome is None:
        return None, None, ""  # no results yet, or not whole yet
    try:
        result = load_own(target / RESULTS_FILE)
    except FileNotFoundError:
        return None, outcome, ""  # not visible yet (a network file system)
    except HpcMagicsError as refusal:  # not the user's alone
        return None, outcome, str(refusal)
    except Exception as error:  # truncated, overwritten: the row says so
        why = str(error).splitlines()[0] if str(error) else ""
        return None, outcome, f"damaged: {type(error).__name__}{': ' if why else ''}{why}"
    if not isinstance(result, CellResult):
        return None, outcome, "damaged: not an hpc_magics result file"
    return result, outcome, ""


def assemble_rows(folder: Any, points: list[Point], states: dict[int, JobStatus],
                  resolve: Callable[[str], Any] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per point from the tasks' result files; also the result names seen.
    ``resolve`` None: the values as the node wrote them as text, nothing unpickled."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, None] = {}
    for index, point in enumerate(points):
        row: dict[str, Any] = dict(point)
        result, outcome, error = _task_result(folder, index)
        if result is not None and result.error_type is not None:
            error = result.remote_traceback or f"{result.error_type}: {result.error_message}"
        elif result is not None:
            try:
                values = dict(getattr(result, "shown", {})) if resolve is None else \
                    load_results(result.state, resolve)[0]
            except HpcMagicsError as problem:
                error = str(problem)
                values = {}
            row.update(values)
            seen.update(dict.fromkeys(values))
        status = states.get(index)
        row[STATE] = status.state if status is not None else "UNKNOWN"
        row[ELAPSED] = outcome.elapsed if outcome is not None else None
        row[ERROR] = error
        rows.append(row)
    return rows, list(seen)


def as_table(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    """A pandas DataFrame when pandas is installed, else the rows (every column filled)."""
    filled = [{column: row.get(column) for column in columns} for row in rows]
    try:
        import pandas
    except ImportError:
        return filled
    return pandas.DataFrame(filled, columns=columns)


def table_html(table: Any) -> str:
    """The results table as HTML: pandas' own rendering, else a plain table (first rows)."""
    to_html = getattr(table, "to_html", None)
    if callable(to_html):
        return str(to_html(max_rows=SHOWN_ROWS, max_cols=12))
    rows = list(table)[:SHOWN_ROWS]
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))[:200]}</td>"
                                    for v in row.values()) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
