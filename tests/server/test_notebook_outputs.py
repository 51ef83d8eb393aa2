"""A %%sbatch cell's outputs land in its notebook after its tab closed: a real jupyter_server
with the extension, a notebook's kernel started through its REST API, the cell sent over
the kernel's websocket with its cell id (as JupyterLab sends it), the kernel shut down
while the job waits at a gate file, then the job ends on the test cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
import requests
import websocket

from hpc_magics.core.jobs import JobSnapshot
from hpc_magics.core.sent_from import SentFrom, source_hash
from hpc_magics.scheduler.job_status import JobStatus
from hpc_magics.scheduler.queue import QueueView
from hpc_magics.server.events import TrackedJob, in_root
from hpc_magics.server.notebook_outputs import NOTE_FILE, adopted, place

from .conftest import RunningServer, StartLocal, execute, squeue_state
from .test_job_events import listed

pytestmark = pytest.mark.timeout(600)  # a busy queue keeps jobs pending

FAST = ("--HpcMagicsServer.events_interval_s=2", "--HpcMagicsServer.jobs_poll_interval_s=2")
CELL_ID = "the-sbatch-cell"
WRITE_TIMEOUT_S = 150.0


def cell_source(gate: Path) -> str:
    """A cell that prints, waits until the test opens the gate, prints and ends on a value."""
    return ("%%sbatch --name keepout\nimport os, time\nprint('before the gate', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.2)\n"
            "print('after the gate')\nanswer = 6 * 7\nanswer")


@dataclass(frozen=True)
class Sent:
    """The cell's job, and the notebook's session and kernel that sent it."""

    job_id: str
    folder: Path
    notebook: Path
    session: str
    kernel: str


def sweep_source(gate: Path) -> str:
    """A sweep of three tasks that wait at the gate; the one with ``x=0`` fails."""
    return ("%%sbatch --name keepout-sweep --sweep x=0,1,2\nimport os, time\n"
            f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.2)\n"
            "label = 'point ' * 100\ny = 10 // x")


def open_notebook(server: RunningServer, source: str, cell_id: str = CELL_ID
                  ) -> tuple[Path, str, str]:
    """A notebook of an intro and the cell, its session's kernel started with hpc_magics
    loaded: the notebook, the session's id, the kernel's."""
    notebook = server.folder / "root" / "analysis.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# intro", id="intro"),
        nbformat.v4.new_code_cell(source, id=cell_id)]), notebook)
    session = server.post("api/sessions", json={"path": "analysis.ipynb", "type": "notebook",
                                                "name": "analysis.ipynb",
                                                "kernel": {"name": "python3"}})
    assert session.status_code == 201, session.text
    kernel = session.json()["kernel"]["id"]
    execute(server, kernel, "%load_ext hpc_magics\nimport hpc_magics\n"
                            "%hpc_resources --profile lab --backend slurm -t 5")
    return notebook, session.json()["id"], kernel


def submit(server: RunningServer, gate: Path, source: str | None = None) -> Sent:
    """A notebook with the cell, run in its session's kernel; the job waits at ``gate``."""
    source = source or cell_source(gate)
    notebook, session, kernel = open_notebook(server, source)
    job_id, folder = run_cell(server, kernel, source)
    return Sent(job_id, folder, notebook, session, kernel)


def run_cell(server: RunningServer, kernel: str, source: str) -> tuple[str, Path]:
    """The notebook's cell run (again) in ``kernel``: its job's id and folder."""
    said = execute(server, kernel, source, timeout=90, cell_id=CELL_ID)
    where = execute(server, kernel, "h = hpc_magics.job()\nprint(h.job_id)\n"
                                    "print(h.folder.path)").split()
    assert len(where) == 2 and where[0].isdigit(), f"no job; the cell said:\n{said}\n{where}"
    return where[0], Path(where[1])


def submit_and_close(server: RunningServer, gate: Path, source: str | None = None
                     ) -> tuple[str, Path, Path]:
    """The cell submitted, then the session and its kernel shut down (the tab closed) while
    the job waits at ``gate``: the job id, its folder, the notebook."""
    sent = submit(server, gate, source)
    closed = requests.delete(server.url + f"api/sessions/{sent.session}",
                             headers=server.headers(), timeout=30)
    assert closed.status_code == 204
    assert sent.kernel not in [k["id"] for k in server.get("api/kernels").json()]
    # the kernel is gone before the job ends: the job still waits at its gate
    assert not (sent.folder / "outcome.json").exists()
    return sent.job_id, sent.folder, sent.notebook


def open_tab(server: RunningServer, kernel: str) -> Any:
    """A client connected to the kernel, as an open notebook tab is."""
    url = server.url.replace("http://", "ws://") + f"api/kernels/{kernel}/channels"
    return websocket.create_connection(f"{url}?session_id={uuid.uuid4().hex}", timeout=30,
                                       header=[f"Authorization: token {server.token}"])


def wait_for_note(folder: Path, server: RunningServer) -> dict[str, Any]:
    """The server's word on the job of ``folder``, awaited from the job's end (a busy queue
    keeps a job pending for minutes: the test's own time-out bounds that)."""
    job_id = json.loads((folder / "meta.json").read_text())["job_id"]
    deadline = time.monotonic() + WRITE_TIMEOUT_S
    while not (folder / NOTE_FILE).exists():
        if not listed(server).get(job_id, {}).get("final", True):
            deadline = time.monotonic() + WRITE_TIMEOUT_S
        if time.monotonic() > deadline:
            pytest.fail(f"the server never wrote the job's outputs (nor refused to):\n"
                        f"{server.log[-3000:]}", pytrace=False)
        time.sleep(1)
    return dict(json.loads((folder / NOTE_FILE).read_text()))


def run_with_tab_closed(server: RunningServer, gate: Path,
                        meanwhile: Callable[[Path], None] = lambda notebook: None,
                        source: str | None = None) -> tuple[str, Path, Path, dict[str, Any]]:
    """The cell submitted and its tab closed; ``meanwhile(notebook)`` while the job waits
    at its gate; then the gate opened and the server's word awaited (its note file)."""
    try:
        job_id, folder, notebook = submit_and_close(server, gate, source)
        meanwhile(notebook)
    finally:
        gate.touch()
    return job_id, folder, notebook, wait_for_note(folder, server)


@pytest.mark.slow
def test_outputs_land_in_the_cell_of_a_notebook_whose_kernel_is_gone(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    server = local_server(*FAST)
    gate = tmp_path / "gate"
    job_id, folder, notebook, note = run_with_tab_closed(server, gate)
    meta = json.loads((folder / "meta.json").read_text())
    assert Path(meta["notebook"]).resolve() == notebook.resolve()
    assert meta["sent_from"]["cell_id"] == CELL_ID and meta["sent_from"]["kernel_id"]
    assert note["written"] is True, note
    saved = nbformat.read(notebook, as_version=4)
    assert saved.cells[0].source == "# intro"  # the other cells as they were
    cell = saved.cells[1]
    assert cell.source == cell_source(gate)
    assert cell.metadata["hpc_magics"]["job_id"] == job_id
    assert cell.metadata["hpc_magics"]["state"] == "COMPLETED"
    assert cell.outputs[0].text.startswith(f"[hpc_magics] job {job_id} ended COMPLETED at ")
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert "before the gate\nafter the gate\n" in text
    assert cell.outputs[-1].output_type == "execute_result"
    assert cell.outputs[-1].data["text/plain"] == "42"
    assert f"job {job_id}'s outputs written into analysis.ipynb" in server.log


@pytest.mark.slow
def test_a_cell_edited_while_its_job_ran_is_left_alone(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    server = local_server(*FAST)
    edited: list[bytes] = []

    def edit(notebook: Path) -> None:
        changed = nbformat.read(notebook, as_version=4)
        changed.cells[1].source += "\nprint('my edit')"
        nbformat.write(changed, notebook)
        edited.append(notebook.read_bytes())

    job_id, _, notebook, note = run_with_tab_closed(server, tmp_path / "gate", edit)
    assert note["written"] is False and "edited" in note["why_not"], note
    assert notebook.read_bytes() == edited[0]
    assert f"job {job_id}'s outputs not written into analysis.ipynb" in server.log


@pytest.mark.slow
def test_a_sweeps_table_lands_in_its_cell_with_each_failed_tasks_error(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    server = local_server(*FAST)
    gate = tmp_path / "gate"
    job_id, _, notebook, note = run_with_tab_closed(server, gate, source=sweep_source(gate))
    assert note["written"] is True, note
    cell = nbformat.read(notebook, as_version=4).cells[1]
    assert cell.source == sweep_source(gate)
    assert cell.metadata["hpc_magics"]["job_id"] == job_id
    assert cell.metadata["hpc_magics"]["tasks"] == {"COMPLETED": 2, "FAILED": 1}
    first, table, failed = cell.outputs
    assert first.text.startswith(f"[hpc_magics] sweep job {job_id} ended 2 COMPLETED · "
                                 "1 FAILED at ")
    # the table a fetch shows: parameters, the values as the node wrote them, states
    html, text = table.data["text/html"], table.data["text/plain"]
    assert "<table" in html and "COMPLETED" in html and "ZeroDivisionError" in html, html
    assert "point point" in html and "..." in html  # a long value, cut on the node
    assert all(word in text for word in ("x", "y", "label", "state", "FAILED")), text
    assert (failed.name, failed.text) == ("stderr", "task 0 (x=0): FAILED: ZeroDivisionError: "
                                          "integer division or modulo by zero\n")
    nbformat.validate(nbformat.read(notebook, as_version=4))


@pytest.mark.slow
def test_a_tab_open_past_the_end_has_the_outputs_written_when_it_closes_however_late(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    """A tab open when the job ends shows the outputs itself; they are in no file yet (a
    kernel that dies, a tab closed unsaved, lose them): written when it closes, also after
    the server stopped listing the job (here 3 s), the cell's later job's last."""
    server = local_server(*FAST, "--HpcMagicsServer.ended_jobs_shown_minutes=0.05")
    gate = tmp_path / "gate"
    since = server.get("hpc-magics/jobs/events").json()["last"]
    try:
        first = submit(server, gate)
        tab = open_tab(server, first.kernel)
        again_id, again_folder = run_cell(server, first.kernel, cell_source(gate))
    finally:
        gate.touch()
    try:
        jobs, ended = {first.job_id, again_id}, set[str]()
        while ended != jobs or jobs & set(listed(server)):  # ended, and no longer listed
            events = server.get(f"hpc-magics/jobs/events?since={since}").json()["events"]
            ended |= {event["job_id"] for event in events} & jobs
            time.sleep(1)
        assert not (first.folder / NOTE_FILE).exists()
        assert not (again_folder / NOTE_FILE).exists()
        assert "hpc_magics" not in nbformat.read(first.notebook, as_version=4).cells[1].metadata
    finally:
        tab.close()  # the tab closed, its kernel still running
    assert wait_for_note(first.folder, server)["written"] is True
    assert wait_for_note(again_folder, server)["written"] is True
    cell = nbformat.read(first.notebook, as_version=4).cells[1]
    assert cell.metadata["hpc_magics"]["job_id"] == again_id  # the cell's latest job
    assert first.kernel in [k["id"] for k in server.get("api/kernels").json()]


def stop(server: RunningServer) -> None:
    """The server stopped as its user stops it, its kernels with it; killed when it takes
    long (a loaded machine), and then its runtime files are gone as after a clean stop."""
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=30)
        for left in server.runtime_dir.glob("jpserver-*"):
            left.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("ended", ["while-no-server-ran", "after-the-server-started-again"])
def test_a_restarted_server_writes_the_outputs_of_the_jobs_its_predecessor_sent(
        ended: str, local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    """The server stopped while the cell's job ran (outside a Slurm job a restarted server
    is another server: its kernels' jobs were not its own), the job ended before it started
    again, or after: the server started again writes the outputs into the cell."""
    server = local_server(*FAST)
    gate = tmp_path / "gate"
    try:
        sent = submit(server, gate)
        stop(server)
        if ended == "while-no-server-ran":
            gate.touch()
            deadline = time.monotonic() + WRITE_TIMEOUT_S
            while not (sent.folder / "outcome.json").exists() or \
                    squeue_state(sent.job_id) in {"PENDING", "RUNNING", "COMPLETING"}:
                assert time.monotonic() < deadline, "the job did not end"
                time.sleep(1)
        again = local_server(*FAST, again=server)
    finally:
        gate.touch()
    note = wait_for_note(sent.folder, again)
    assert note["written"] is True, note
    cell = nbformat.read(sent.notebook, as_version=4).cells[1]
    assert cell.metadata["hpc_magics"]["job_id"] == sent.job_id
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert "before the gate\nafter the gate\n" in text
    assert f"job {sent.job_id}'s outputs written into analysis.ipynb" in again.log


def test_outputs_go_only_into_the_very_cell_that_sent_them_as_it_was_sent() -> None:
    sent = SentFrom("nb.ipynb", "c2", source_hash("%%sbatch\nx = 1"))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%%sbatch\nx = 1", id="c1"),
        nbformat.v4.new_code_cell("%%sbatch\nx = 1", id="c2")])
    shown = [{"output_type": "stream", "name": "stdout", "text": "hello\n"}]
    assert place(notebook, sent, shown, {"job_id": "7"}) is None
    assert notebook.cells[0].outputs == [] and "hpc_magics" not in notebook.cells[0].metadata
    assert notebook.cells[1].outputs[0].text == "hello\n"
    assert notebook.cells[1].metadata["hpc_magics"] == {"job_id": "7"}
    nbformat.validate(notebook)

    notebook.cells[1].source += "\n# my edit"
    assert "edited" in str(place(notebook, sent, shown, {}))
    del notebook.cells[1]
    assert "no longer in the notebook" in str(place(notebook, sent, shown, {}))


def test_a_notebook_outside_the_servers_root_has_no_path_there(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    assert in_root(str(root / "sub" / "nb.ipynb"), root) == "sub/nb.ipynb"
    assert in_root("sub/nb.ipynb", root) == "sub/nb.ipynb"
    assert in_root(str(tmp_path / "elsewhere.ipynb"), root) is None
    assert in_root("../elsewhere.ipynb", root) is None


def test_a_job_is_taken_up_only_from_a_server_known_to_be_over() -> None:
    """Real processes and real queue views: a server's process on this host that still
    runs (and ran when the job was sent) keeps its jobs; one gone, or a process started
    after the job was sent on its pid, is over; a server on another host never is; a server
    in a Slurm job is over once the queue no longer lists that job, never on a failed look."""
    here, sent_at = socket.gethostname(), time.time() - 600  # sent ten minutes ago

    def job(server: str | None, ours: bool = False) -> TrackedJob:
        return TrackedJob("7", "cell", JobStatus("7", "COMPLETED", "sacct"), None,
                          Path("/nowhere"), sent_at, ours, server)

    view = QueueView(jobs=(JobSnapshot("99", "RUNNING"),), updated=sent_at)
    later = subprocess.Popen(["sleep", "60"])  # on a pid, after the job was sent
    try:
        assert adopted(job(f"{here}-{later.pid}-abc123"), view)
    finally:
        later.kill()
        later.wait(timeout=10)
    assert adopted(job(f"{here}-{later.pid}-abc123"), view)  # gone
    assert not adopted(job(f"{here}-1-abc123"), view)  # runs, and ran before (init)
    assert not adopted(job(f"elsewhere-{later.pid}-abc123"), view)
    assert not adopted(job(f"{here}-{later.pid}-abc123", ours=True), view)
    assert not adopted(job(None), view)
    assert not adopted(job("slurm-job-99"), view)  # still queued
    assert adopted(job("slurm-job-98"), view)
    assert not adopted(job("slurm-job-98"), QueueView(updated=sent_at, error="squeue: timeout"))
