"""A ``%%sbatch`` cell's outputs land in its notebook, also when nobody has it open.

At submission the kernel records in the job's ``meta.json`` which notebook and which cell
sent it (``sent_from``: the cell's id, a hash of its source, the kernel's id;
``magics/submission.py``). When the server's job watcher (``events.py``: no scheduler call
of its own) has seen such a job end, this writes the job's outputs into that cell, as a
fetch shows them (``fetching.cell_outputs``: the one renderer), with
``metadata.hpc_magics`` naming the job, through the server's contents manager (its atomic
write, its checkpoints and hooks: what JupyterLab's own save uses).

The rule: the outputs are written only while nobody has the notebook open, that is no
client (a browser tab) is connected to the kernel that submitted the job, nor to the
kernel of any session on that notebook. A kernel with a tab shows the job's output itself
(its live view; ``%hpc_fetch``), and a file written under an open editor would make it
say "the file changed on disk". Written at the first look after the last tab closes, if
that is while the server lists the job as ended (``ended_jobs_shown_minutes``). Only
jobs of this server's kernels, and notebooks under its root. Never over an edit: when the
cell is gone or its source changed since it was sent, the notebook is left alone, said in
the server's log and in ``notebook-outputs.json`` in the job folder. That file records what
was done either way: each job is written into its notebook at most once.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from jupyter_server.utils import ensure_async

from ..core.jobs import SUCCESS_STATES, normalize_state
from ..core.sent_from import SentFrom, source_hash
from ..jobfolder.files import write_atomically
from ..jobfolder.folder import JobFolder
from .events import TrackedJob

NOTE_FILE = "notebook-outputs.json"


def api_path(notebook: str, root: Path) -> str | None:
    """The notebook's path relative to the server's root (jupyter_server gives a kernel its
    absolute path), or None outside the root."""
    path = Path(notebook)
    if not path.is_absolute():
        path = root / path
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def waiting(job: TrackedJob, folder: JobFolder, now: float) -> bool:
    """A job to write now (a cell's, not a kernel's): ended, not written (nor refused)
    before, its results in its folder, or given the time a network file system may take to
    show them."""
    from ..fetching import RESULTS_GRACE_S  # the results' loader: loaded on first use

    if not (job.final and job.from_this_server and job.ended_at is not None) or \
            job.kind == "kernel" or (folder.path / NOTE_FILE).exists():
        return False
    return folder.has_results() or normalize_state(job.status.state) not in SUCCESS_STATES \
        or now - job.ended_at > RESULTS_GRACE_S


def connections(serverapp: Any, kernel_id: str) -> int:
    """How many clients (tabs) the server's kernel has; 0 for a kernel it does not run."""
    manager = serverapp.kernel_manager
    if not kernel_id or kernel_id not in manager:
        return 0
    return int(manager.kernel_model(kernel_id).get("connections") or 0)


async def someone_looking(serverapp: Any, sent: SentFrom, path: str) -> bool:
    """The rule: a client is connected to the kernel that sent the job, or to the kernel
    of a session on the notebook (a restarted or another kernel in an open tab)."""
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


async def write_outputs(serverapp: Any, jobs: list[TrackedJob], log: Any) -> None:
    """Write each ended job's outputs into its notebook cell when nobody has it open."""
    loop = asyncio.get_running_loop()
    root = Path(serverapp.root_dir).expanduser()
    now = time.time()
    for job in jobs:
        if job.folder is None:
            continue
        folder = JobFolder(job.folder)
        if not waiting(job, folder, now):
            continue
        sent = SentFrom.from_meta(folder.meta())
        if sent is None:
            continue
        path = api_path(sent.notebook, root)
        if path is not None and await someone_looking(serverapp, sent, path):
            continue  # the open notebook shows it; written once the last tab closed
        try:
            said = await _write(serverapp, job, folder, sent, path, loop)
        except Exception as error:  # a notebook that does not load, a full disk
            said = f"could not write it: {type(error).__name__}: {error}"
        where = f"{path or sent.notebook}, cell {sent.cell_id}"
        if said is None:
            log.info("hpc_magics: job %s's outputs written into %s", job.job_id, where)
        else:
            log.warning("hpc_magics: job %s's outputs not written into %s: %s",
                        job.job_id, where, said)
        note = {"job_id": job.job_id, "notebook": path or sent.notebook,
                "cell_id": sent.cell_id, "written": said is None, "why_not": said,
                "at": time.time()}
        await loop.run_in_executor(None, write_atomically, folder.path / NOTE_FILE,
                                   json.dumps(note, indent=1))


async def _write(serverapp: Any, job: TrackedJob, folder: JobFolder, sent: SentFrom,
                 path: str | None, loop: asyncio.AbstractEventLoop) -> str | None:
    if path is None:
        return "the notebook is not under this server's root"
    contents = serverapp.contents_manager
    if not await ensure_async(contents.file_exists(path)):
        return "the notebook is not there any more"
    from ..fetching import cell_outputs

    state = job.status.state
    outputs = await loop.run_in_executor(None, cell_outputs, folder, job.job_id, state)
    model = await ensure_async(contents.get(path, content=True, type="notebook"))
    stamp = {"job_id": job.job_id, "state": state, "ended": _iso(job.ended_at),
             "written_by": "server"}
    said_first = {"output_type": "stream", "name": "stdout", "text": (
        f"[hpc_magics] job {job.job_id} ended {state} at {stamp['ended']}: its outputs below "
        "were written in by the server, as the notebook was not open\n")}
    said = place(model["content"], sent, [said_first, *outputs], stamp)
    if said is None:
        await ensure_async(contents.save(
            {"type": "notebook", "format": "json", "content": model["content"]}, path))
    return said


def _iso(moment: float | None) -> str | None:
    return None if moment is None else time.strftime("%Y-%m-%dT%H:%M:%S%z",
                                                     time.localtime(moment))
