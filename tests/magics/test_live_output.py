"""A ``%%sbatch`` cell's output reaches the cell while its job runs, in a real kernel on the
test cluster, as a front end receives it (the kernel's iopub messages): each printed line
before the job's results exist, a progress bar of 10,000 steps as one line; at the end of a
``--wait`` cell the live view gives way to plain output, each piece once."""

from __future__ import annotations

import queue
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

# Each line waits for the test to have seen it in the kernel (a file the test makes): the
# job cannot end before every line reached the kernel, and without live output it never
# would (the cell gives up after two minutes, failing the job).
LINES = """
import os, time
for i in range(12):
    print(f"line {{i}}")
    time.sleep(0.5)
    waited = time.time()
    while not os.path.exists(os.path.join({ack!r}, str(i))):
        if time.time() - waited > 120:
            raise SystemExit(f"line {{i}} never reached the kernel")
        time.sleep(0.05)
"""

# A rich display and a figure half-way; the cell ends once the test saw both in the cell.
DISPLAYS = """
import os, time
import matplotlib.pyplot as plt
from IPython.display import HTML
print("before")
display(HTML("<b>rich</b>"))
plt.plot([1, 2, 3])
plt.show()
print("after")
waited = time.time()
while not os.path.exists({ack!r}):
    if time.time() - waited > 120:
        raise SystemExit("the displays never reached the kernel")
    time.sleep(0.05)
"""

PROGRESS = """
import sys
for n in range(10_001):
    sys.stderr.write(f"\\rstep {n}/10000")
sys.stderr.write("\\n")
done = True
"""


@pytest.fixture
def kernel(slurm_cluster: Any, tmp_path: Path, real_kernel: Any
           ) -> Iterator[tuple[Any, Path]]:
    with real_kernel(tmp_path / "jobs", tmp_path / "runtime") as client:
        yield client, tmp_path / "jobs"


class Cell:
    """One executed cell as a front end sees it: its Output widgets' latest outputs and
    the text the cell printed itself."""

    def __init__(self, client: Any, code: str) -> None:
        self.client = client
        self.msg_id = client.execute(code)
        self.output_widgets: dict[str, list[dict[str, Any]]] = {}
        self.printed = ""
        self.displayed: list[dict[str, Any]] = []  # the cell's own, outside the widgets
        self.status = ""
        self.idle = False

    def step(self) -> None:
        """Take the next iopub message."""
        try:
            msg = self.client.get_iopub_msg(timeout=1)
        except queue.Empty:
            return
        content, kind = msg["content"], msg["msg_type"]
        state = content.get("data", {}).get("state", {}) if kind.startswith("comm") else {}
        if kind == "comm_open" and state.get("_model_name") == "OutputModel":
            self.output_widgets[content["comm_id"]] = list(state.get("outputs", []))
        elif kind == "comm_msg" and content["comm_id"] in self.output_widgets and (
                "outputs" in state):
            self.output_widgets[content["comm_id"]] = list(state["outputs"])
        if msg["parent_header"].get("msg_id") != self.msg_id:
            return
        if kind == "stream":
            self.printed += content["text"]
        elif kind == "display_data":
            self.displayed.append(content["data"])
        elif kind == "error":
            self.printed += "\n".join(content["traceback"])
        elif kind == "status" and content["execution_state"] == "idle":
            self.idle = True

    def shown(self) -> list[dict[str, Any]]:
        [outputs] = self.output_widgets.values() or [[]]
        return outputs

    def finish(self) -> None:
        while not self.idle:
            self.step()
        reply = self.client.get_shell_msg(timeout=60)
        self.status = reply["content"]["status"]


def test_each_line_reaches_the_cell_while_the_job_runs(kernel: tuple[Any, Path],
                                                       tmp_path: Path) -> None:
    client, jobs = kernel
    ack = tmp_path / "seen"
    ack.mkdir()
    cell = Cell(client, "%%sbatch --wait\n" + LINES.format(ack=str(ack)))
    seen: list[str] = []
    while not cell.idle:
        cell.step()
        for output in cell.shown():
            for number in re.findall(r"line (\d+)", output["text"]):
                if number not in seen:
                    # in the cell before the job's results: the job was still running
                    assert not list(jobs.glob("*/results.pkl")), f"line {number} came late"
                    seen.append(number)
                    (ack / number).touch()
    cell.finish()
    assert cell.status == "ok", cell.printed
    assert seen == [str(i) for i in range(12)]  # each once, in order
    # at the end the live view gives way to plain output in its own cell (what the saved
    # notebook keeps and every front end shows): each line once, in order
    assert cell.shown() == []
    assert re.findall(r"line \d+", cell.printed) == [f"line {i}" for i in range(12)]
    assert "now in the notebook" in cell.printed  # the fetch still said what came back


def test_a_progress_bar_ends_as_one_line(kernel: tuple[Any, Path]) -> None:
    client, _ = kernel
    cell = Cell(client, "%%sbatch --wait\n" + PROGRESS)
    cell.finish()
    assert cell.status == "ok", cell.printed
    assert cell.shown() == []  # the view gave way to plain output
    assert re.findall(r"step \d+/\d+", cell.printed) == ["step 10000/10000"]  # one line


def test_a_display_and_a_figure_reach_the_cell_while_the_job_runs(
        kernel: tuple[Any, Path], tmp_path: Path) -> None:
    client, jobs = kernel
    ack = tmp_path / "seen"
    cell = Cell(client, "%%sbatch --wait\n" + DISPLAYS.format(ack=str(ack)))
    while not cell.idle:
        cell.step()
        if not ack.exists() and len(cell.shown()) == 4:  # both displays and "after"
            assert not list(jobs.glob("*/results.pkl")), "the displays came late"
            ack.touch()
    cell.finish()
    assert cell.status == "ok", cell.printed
    assert cell.shown() == []  # the view gave way to plain output, in the same order
    assert re.findall(r"before|after", cell.printed) == ["before", "after"]
    assert [d["text/html"] for d in cell.displayed if "text/html" in d] == ["<b>rich</b>"]
    assert len([d for d in cell.displayed if "image/png" in d]) == 1  # once


GATED = """
import os, time
print("before the gate", flush=True)
while not os.path.exists({gate!r}):
    time.sleep(0.2)
print("after the gate")
"""


def send_gated(client: Any, gate: Path) -> str:
    """A cell whose job prints, waits at ``gate`` and prints again: its job id."""
    submitted = Cell(client, "%%sbatch\n" + GATED.format(gate=str(gate)))
    submitted.finish()
    assert submitted.status == "ok", submitted.printed
    [job_id] = re.findall(r"%hpc_fetch (\d+)", submitted.printed)
    return job_id


def restart(client: Any) -> None:
    client.parent.restart_kernel()
    client.wait_for_ready(timeout=60)


def follows_through_the_gate(cell: Cell, jobs: Path, gate: Path) -> None:
    """The job's output before its gate shows in ``cell`` while the job waits there; the
    gate opened, the rest."""
    try:
        while "before the gate" not in "".join(o.get("text", "") for o in cell.shown()):
            cell.step()
        # in the cell while the job still waits at its gate
        assert not list(jobs.glob("*/results.pkl"))
    finally:
        gate.touch()
    while "after the gate" not in "".join(o.get("text", "") for o in cell.shown()):
        cell.step()
    cell.finish()
    assert cell.status == "ok", cell.printed


def test_after_a_kernel_restart_hpc_live_follows_the_running_job_again(
        kernel: tuple[Any, Path], tmp_path: Path) -> None:
    client, jobs = kernel
    gate = tmp_path / "gate"
    try:
        job_id = send_gated(client, gate)
        restart(client)
        setup = ("%load_ext hpc_magics\n"
                 "get_ipython().magics_manager.registry['HpcMagicsKernel'].jobs_dir = "
                 f"{str(jobs)!r}")
        assert client.execute_interactive(setup, timeout=60)["content"]["status"] == "ok"
    except BaseException:
        gate.touch()
        raise
    follows_through_the_gate(Cell(client, f"%hpc_live {job_id}"), jobs, gate)


def test_a_restarted_kernel_takes_up_its_notebooks_running_job_by_itself(
        slurm_cluster: Any, real_kernel: Any, tmp_path: Path) -> None:
    """After a restart, ``%load_ext`` alone shows the notebook's running job and its output
    from the start as it comes; a job another notebook sent is left to that one."""
    jobs, gate = tmp_path / "jobs", tmp_path / "gate"
    notebook = tmp_path / "analysis.ipynb"
    with real_kernel(jobs, tmp_path / "runtime", JPY_SESSION_NAME=str(notebook)) as client:
        try:
            job_id = send_gated(client, gate)
            elsewhere = str(tmp_path / "other.ipynb")  # as another notebook's kernel sends
            Cell(client, f"import os\nos.environ['JPY_SESSION_NAME'] = {elsewhere!r}").finish()
            send_gated(client, gate)
            restart(client)
        except BaseException:
            gate.touch()
            raise
        cell = Cell(client, "%load_ext hpc_magics")
        follows_through_the_gate(cell, jobs, gate)
        assert re.findall(r"job (\d+) \(", cell.printed) == [job_id]  # not the other's
        fetched = Cell(client, "%hpc_fetch --wait\nimport hpc_magics\n"
                               "print('fetched', hpc_magics.job().job_id)")
        fetched.finish()
        assert f"fetched {job_id}" in fetched.printed, fetched.printed
