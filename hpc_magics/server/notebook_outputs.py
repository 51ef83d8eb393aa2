"""A ``%%sbatch`` cell's outputs land in its notebook, also when nobody has it open.

The job's ``meta.json`` names the cell that sent it (``sent_from``, ``magics/submission.py``).
Once the server's job watcher (``events.py``) has seen it end and no tab is connected to the
notebook's kernels, this writes the outputs as a fetch shows them (``fetching.cell_outputs``)
through the contents manager, at most once, never over an edit; ``notebook-outputs.json`` in
the job folder says what was done.
The whole rule: docs/how-it-works.md, "Outputs land in the notebook, also with the tab closed".
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_server.utils import ensure_async

from ..core.jobs import SUCCESS_STATES, normalize_state
from ..core.sent_from import SentFrom, source_hash
from ..jobfolder.files import OUTCOME_FILE, write_atomically
from ..jobfolder.folder import JobFolder
from .events import JobTracker, TrackedJob, in_root

NOTE_FILE = "notebook-outputs.json"
SETTLED: set[Path] = set()  # job folders written, refused, or not sent from a cell
FIRST_SEEN_OVER: dict[Path, float] = {}  # an adopted job with no outcome: when first seen
SLURM_SERVER = "slurm-job-"  # a server in a Slurm job is known by it (extension.py)


def waiting(job: TrackedJob, folder: JobFolder, now: float, ended_at: float) -> bool:
    """An ended cell's or sweep's job to write now: not written (nor refused) before, its
    results in its folder, or given the time a network file system may take to show them
    since it was seen ended (``ended_at``)."""
    from ..fetching import RESULTS_GRACE_S  # the results' loader: loaded on first use

    if (folder.path / NOTE_FILE).exists():
        return False
    return folder.has_results() or normalize_state(job.status.state) not in SUCCESS_STATES \
        or now - ended_at > RESULTS_GRACE_S


def adopted(job: TrackedJob, view: Any) -> bool:
    """A job sent by a kernel of a Jupyter server that is over: a server restarted (outside
    a Slurm job its id is new) or started in a new Slurm job takes up its outputs. Over: its
    Slurm job no longer in the queue (``view``: the user's latest squeue), or its process
    (``HOST-PID-…``, on this host) gone or a process started after the job was sent; a
    server on another host, or the queue not answering, is never called over."""
    from ..scheduler.processes import started_by

    server = job.server_id or ""
    if job.from_this_server or not server:
        return False
    if server.startswith(SLURM_SERVER):
        return view.error is None and view.updated is not None and \
            view.find(server[len(SLURM_SERVER):]) is None
    host, _, pid = server.rpartition("-")[0].rpartition("-")
    return host == socket.gethostname() and pid.isdigit() and \
        not started_by(int(pid), job.submitted_at or 0.0)


def seen_ended_at(job: TrackedJob, folder: JobFolder, now: float) -> float:
    """When the job ended: as this server saw it, else (it ended while no server ran) when
    its outcome was written, else when this server first saw it over."""
    if job.ended_at is not None:
        return job.ended_at
    try:
        return (folder.path / OUTCOME_FILE).stat().st_mtime
    except OSError:
        return FIRST_SEEN_OVER.setdefault(folder.path, now)


def connections(serverapp: Any, kernel_id: str) -> int:
    """How many clients (tabs) the server's kernel has; 0 for a kernel it does not run."""
    manager = serverapp.kernel_manager
    if not kernel_id or kernel_id not in manager:
        return 0
    return int(manager.kernel_model(kernel_id).get("connections") or 0)


async def someone_looking(serverapp: Any, sent: SentFrom, path: str) -> bool:
    """The rule: a client is connected to the kernel that sent the job, or to the kernel
    of a Jupyter session on the notebook (a restarted or another kernel in an open tab)."""
    if connections(serverapp, sent.kernel_id):
        return True
    sessions = await ensure_async(serverapp.session_manager.list_sessions())
    return any(session.get("path") == path and
               connections(serverapp, str((session.get("kernel") or {}).get("id") or ""))
               for session in sessions)


def place(notebook: Any, sent: SentFrom, outputs: list[dict[str, Any]],
          stamp: dict[str, Any]) -> str | None:
    """Put the outputs in the cell that sent the job (``notebook``: nbformat's, changed in
    place); why not, when the cell is gone or edited since."""
    cell = next((c for c in notebook.cells if c.get("id") == sent.cell_id), None)
    if cell is None:
        return f"the cell that sent it (id {sent.cell_id}) is no longer in the notebook"
    if source_hash(cell.source) != sent.source_sha256:
        return "its cell was edited since it was sent"
    import nbformat

    cell.outputs = [nbformat.from_dict(output) for output in outputs]
    cell.metadata["hpc_magics"] = stamp
    return None


async def write_outputs(serverapp: Any, tracker: JobTracker, log: Any) -> None:
    """Write each ended job's outputs into its notebook cell once nobody has it open."""
    root = Path(serverapp.root_dir).expanduser()
    now = time.time()
    view = tracker.watcher.queue.view()  # the cycle's, just asked: no squeue of its own
    # however long ago it ended (a tab open for days); oldest first: of two jobs the same
    # cell sent, the later one's outputs are those left in it
    for job in sorted(tracker.jobs(keep_ended_s=math.inf), key=lambda j: j.submitted_at or 0):
        if job.folder is None or job.folder in SETTLED or not job.final or \
                job.kind == "kernel" or not (job.from_this_server or adopted(job, view)):
            continue  # (a Slurm kernel's job sent no cell)
        folder = JobFolder(job.folder)
        ended_at = seen_ended_at(job, folder, now)
        if not waiting(job, folder, now, ended_at):
            continue
        sent = SentFrom.from_meta(folder.meta())
        if sent is None or await settle(serverapp, root, log, sent, job, folder,
                                        tracker.watcher, ended_at):
            SETTLED.add(job.folder)  # (None: not sent from a notebook's cell: a script)


async def settle(serverapp: Any, root: Path, log: Any, sent: SentFrom, job: TrackedJob,
                 folder: JobFolder, watcher: Any, ended_at: float) -> bool:
    """Write what a fetch shows (``rendered``) into the cell ``sent`` names once nobody has
    its notebook open, and say what was done in the job folder's note; False: not yet (a tab
    open, a sweep's task still running), to be looked at again."""
    loop = asyncio.get_running_loop()
    path = in_root(sent.notebook, root)
    if path is None and not job.from_this_server:
        return True  # left for a server whose root holds its notebook
    if path is not None and await someone_looking(serverapp, sent, path):
        return False  # the open notebook shows it; written once the last tab closed
    if path is None:
        said: str | None = "the notebook is not under this server's root"
    else:
        try:
            shown = await loop.run_in_executor(None, rendered, watcher, job, folder, ended_at)
            if shown is None:
                return False  # a sweep with tasks still running (a retry): a later look
            said = await _write(serverapp, path, sent, *shown)
        except Exception as error:  # a notebook that does not load, a full disk
            said = f"could not write it: {type(error).__name__}: {error}"
    where = f"{path or sent.notebook}, cell {sent.cell_id}"
    if said is None:
        log.info("hpc_magics: job %s's outputs written into %s", job.job_id, where)
    else:
        log.warning("hpc_magics: job %s's outputs not written into %s: %s", job.job_id, where,
                    said)
    note = {"job_id": job.job_id, "notebook": path or sent.notebook,
            "cell_id": sent.cell_id, "written": said is None, "why_not": said,
            "at": time.time()}
    await loop.run_in_executor(None, write_atomically, folder.path / NOTE_FILE,
                               json.dumps(note, indent=1))
    return True


def rendered(watcher: Any, job: TrackedJob, folder: JobFolder, ended_at: float
             ) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """The cell's outputs as a fetch shows them (``fetching.cell_outputs``, a sweep's
    table), under a first line naming the job, and the cell's stamp; None for a sweep
    some of whose tasks have not ended."""
    from ..fetching import cell_outputs

    state = job.status.state
    ended = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ended_at))
    stamp: dict[str, Any] = {"job_id": job.job_id, "state": state, "ended": ended,
                             "written_by": "server"}
    if job.kind == "sweep":
        swept = sweep_outputs(watcher, folder)
        if swept is None:
            return None
        counts, outputs = swept
        stamp["tasks"] = counts
        what = f"sweep job {job.job_id} ended " + " · ".join(f"{n} {s}" for s, n in counts.items())
    else:
        outputs = cell_outputs(folder, job.job_id, state)
        what = f"job {job.job_id} ended {state}"
    first = (f"[hpc_magics] {what} at {ended}: its outputs below were written in by the "
             "server, with no tab open on the notebook\n")
    return [{"output_type": "stream", "name": "stdout", "text": first}, *outputs], stamp


def sweep_outputs(watcher: Any, folder: JobFolder
                  ) -> tuple[dict[str, int], list[dict[str, Any]]] | None:
    """A sweep's tasks per state, then its table as a fetch shows it (its values as the
    node wrote them as text: nothing is unpickled here) and each failed task's error in
    short; None while a task has not ended."""
    from ..sweep_handle import ERROR, SHOWN_ROWS, STATE, asked_task_states, sweep_table, table_html

    states = asked_task_states(watcher, folder)
    if not all(status.final for status in states.values()):
        return None
    table = sweep_table(folder, states, None)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    parameters = list(folder.meta().get("sweep", {}).get("parameters", []))
    failed = []
    for index, row in enumerate(rows):
        if row[STATE] not in SUCCESS_STATES:  # the error's last line: its type and words
            error = (str(row[ERROR] or "").strip().splitlines() or ["no results"])[-1]
            point = ", ".join(f"{name}={row[name]!r}" for name in parameters)
            failed.append(f"task {index} ({point}): {row[STATE]}: {error}\n")
    text = table.to_string(max_rows=SHOWN_ROWS, max_colwidth=80) \
        if hasattr(table, "to_string") else "\n".join(map(str, table[:SHOWN_ROWS]))
    outputs: list[dict[str, Any]] = [{"output_type": "display_data", "metadata": {}, "data": {
        "text/html": table_html(table), "text/plain": text}}]
    if failed:
        outputs.append({"output_type": "stream", "name": "stderr", "text": "".join(failed)})
    return dict(Counter(sorted(status.state for status in states.values()))), outputs


async def _write(serverapp: Any, path: str, sent: SentFrom, outputs: list[dict[str, Any]],
                 stamp: dict[str, Any]) -> str | None:
    contents = serverapp.contents_manager
    if not await ensure_async(contents.file_exists(path)):
        return "the notebook is not there any more"
    model = await ensure_async(contents.get(path, content=True, type="notebook"))
    said = place(model["content"], sent, outputs, stamp)
    if said is None:
        await ensure_async(contents.save(
            {"type": "notebook", "format": "json", "content": model["content"]}, path))
    return said
