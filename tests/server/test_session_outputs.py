"""A cell sent to a session (``%%sbatch --session``) has its outputs in the saved notebook
after its tab closed: a real jupyter_server with the extension, a notebook's kernel started
through its REST API that starts a session on the test cluster, the cell sent over the
kernel's websocket with its cell id (as JupyterLab sends it), the websocket closed while
the cell waits at a gate file; the session's job runs on."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import nbformat
import pytest

from hpc_magics.core.sent_from import CELLS_DIR
from hpc_magics.server.notebook_outputs import NOTE_FILE

from .conftest import RunningServer, StartLocal, execute
from .test_notebook_outputs import FAST, open_notebook, open_tab

pytestmark = pytest.mark.timeout(600)  # a busy queue keeps the session's job pending

CELL_ID = "the-session-cell"
WRITE_TIMEOUT_S = 60.0


def cell_source(name: str, gate: Path) -> str:
    """A session cell that prints, waits for the test's gate, prints, displays, ends on a
    value, with a progress bar of carriage returns on the way."""
    return (f"%%sbatch --session {name}\nimport os, time\nprint('before the gate', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.2)\n"
            "for step in range(50):\n    print(f'\\rstep {step}', end='', flush=True)\n"
            "print('\\nafter the gate')\nfrom IPython.display import HTML, display\n"
            "display(HTML('<b>from the node</b>'))\nanswer = 6 * 7\nanswer")


def send_and_close(server: RunningServer, kernel: str, code: str) -> None:
    """The cell sent as a tab sends it; the tab closed once the cell has printed."""
    tab = open_tab(server, kernel)
    msg_id = uuid.uuid4().hex
    tab.send(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {"cellId": CELL_ID}, "channel": "shell",
        "buffers": [], "content": {"code": code, "silent": False, "store_history": True,
                                   "user_expressions": {}, "allow_stdin": False,
                                   "stop_on_error": True}}))
    try:
        while True:  # the websocket's own timeout bounds the wait
            frame = tab.recv()
            if isinstance(frame, bytes):
                continue
            message = json.loads(frame)
            if message.get("parent_header", {}).get("msg_id") == msg_id and \
                    "before the gate" in message["content"].get("text", ""):
                return
    finally:
        tab.close()


def kernel_model(server: RunningServer, kernel: str) -> dict[str, Any]:
    return dict(server.get(f"api/kernels/{kernel}").json())


@pytest.mark.slow
def test_a_session_cells_outputs_land_in_its_cell_with_the_tab_closed(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    server = local_server(*FAST)
    name, gate = f"tab{os.getpid()}", tmp_path / "gate"
    source = cell_source(name, gate)
    notebook, _, kernel = open_notebook(server, source, CELL_ID)
    said = execute(server, kernel, f"%hpc_session start {name}\n"
                                   "from hpc_magics.kernel import session as _s\n"
                                   f"print('FOLDER', _s.get({name!r}).folder)\n"
                                   f"print('JOB', _s.get({name!r}).job_id)", timeout=300)
    told = dict(line.split(" ", 1) for line in said.splitlines()
                if line.startswith(("FOLDER ", "JOB ")))
    assert told.keys() == {"FOLDER", "JOB"}, said
    folder, job_id = Path(told["FOLDER"]), told["JOB"]
    try:
        send_and_close(server, kernel, source)
        deadline = time.monotonic() + 30
        while kernel_model(server, kernel)["connections"]:  # the tab closed
            assert time.monotonic() < deadline, kernel_model(server, kernel)
            time.sleep(0.2)
        assert kernel_model(server, kernel)["execution_state"] == "busy"  # at the gate
        gate.touch()
        deadline = time.monotonic() + WRITE_TIMEOUT_S
        notes: list[Path] = []
        while not notes:  # from the cell's end, the server's next looks
            if kernel_model(server, kernel)["execution_state"] != "idle":
                deadline = time.monotonic() + WRITE_TIMEOUT_S
            if time.monotonic() > deadline:
                pytest.fail("the server never wrote the session cell's outputs (nor refused "
                            f"to):\n{server.log[-3000:]}", pytrace=False)
            time.sleep(1)
            notes = list((folder / CELLS_DIR).glob(f"*.{NOTE_FILE}"))
    finally:
        gate.touch()
        execute(server, kernel, f"%hpc_session stop {name}", timeout=60)
    note = json.loads(notes[0].read_text())
    assert note["written"] is True and note["cell_id"] == CELL_ID, note
    assert note["job_id"] == job_id

    saved = nbformat.read(notebook, as_version=4)
    nbformat.validate(saved)
    assert saved.cells[0].source == "# intro"  # the other cells as they were
    cell = saved.cells[1]
    assert cell.source == source
    stamp = cell.metadata["hpc_magics"]
    assert (stamp["job_id"], stamp["session"], stamp["state"]) == (job_id, name, "ok"), stamp
    assert cell.outputs[0].text.startswith(
        f"[hpc_magics] session {name} (job {job_id}) ran this cell, ended ok at ")
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    # the progress bar as one line, as the cell showed it
    assert "before the gate\nstep 49\nafter the gate\n" in text, text
    shown = [o.data for o in cell.outputs if o.output_type == "display_data"]
    assert shown[0]["text/html"] == "<b>from the node</b>", shown
    assert shown[-1]["text/plain"] == "42", shown
    assert f"session {name} (job {job_id})'s outputs written into analysis.ipynb" in server.log
    # the cell's names came back as ever; the session's job ran on after the cell
    assert "42" in execute(server, kernel, "print(answer)")
