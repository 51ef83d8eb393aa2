"""A ``%%sbatch`` cell's output reaches the cell while its job runs, in a real kernel on the
test cluster, as a front end receives it (the kernel's iopub messages): each printed line
before the job's results exist, a progress bar of 10,000 steps as one line; at the end of a
``--wait`` cell the live view gives way to plain output, each piece once; a rerun's output
comes into its widget as it comes, and once."""

from __future__ import annotations

import queue
import re
import time
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

    def __init__(self, client: Any, code: str,
                 models: dict[str, dict[str, Any]] | None = None) -> None:
        self.client = client
        self.msg_id = client.execute(code)
        self.output_widgets: dict[str, list[dict[str, Any]]] = {}
        # every widget model's latest state, by id (shared by the cells of one front end)
        self.models: dict[str, dict[str, Any]] = {} if models is None else models
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
        if state:
            self.models.setdefault(content["comm_id"], {}).update(state)
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


# Fails on its first run (leaving a mark), then prints, waits at the gate and prints again.
FAILS_FIRST = """
import os, time
if not os.path.exists({mark!r}):
    open({mark!r}, "w").close()
    raise RuntimeError("the first run fails")
print("before the gate", flush=True)
waited = time.time()
while not os.path.exists({gate!r}):
    if time.time() - waited > 120:
        raise SystemExit("the gate never opened")
    time.sleep(0.2)
print("after the gate")
total = sum(data)
"""


def _model(reference: str) -> str:
    return reference.removeprefix("IPY_MODEL_")


def job_parts(models: dict[str, dict[str, Any]], job_id: str) -> dict[str, str]:
    """Job ``job_id``'s widget as a front end has it: its live output ("live") and its
    buttons shown, by label; each a model id. Empty before the widget is there."""
    for box in models.values():
        children = [_model(c) for c in box.get("children", ()) if isinstance(c, str)]
        if not any(str(models.get(c, {}).get("value", "")).startswith(
                f"<b>job <code>{job_id}</code>") for c in children):
            continue
        parts = {}
        for child in children:
            model = models.get(child, {})
            if model.get("_model_name") == "OutputModel":
                parts["live"] = child
            for button in map(_model, model.get("children", ())):  # the buttons' row
                state = models.get(button, {})
                if state.get("_model_name") == "ButtonModel" and models.get(
                        _model(state["layout"]), {}).get("display") != "none":
                    parts[state["description"]] = button
        return parts
    return {}


def live_text(models: dict[str, dict[str, Any]], job_id: str) -> str:
    outputs = models.get(job_parts(models, job_id).get("live", ""), {}).get("outputs", ())
    return "".join(output.get("text", "") for output in outputs)


def click(client: Any, button: str) -> None:
    """A click on a widget's button, as a front end sends it."""
    client.shell_channel.send(client.session.msg("comm_msg", {
        "comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}))


def until(cell: Cell, found: Any, timeout: float, why: str) -> Any:
    """Take the front end's messages until ``found()`` says something (returned)."""
    deadline = time.monotonic() + timeout
    while not (value := found()):
        assert time.monotonic() < deadline, why
        cell.step()
    return value


@pytest.mark.slow
def test_a_reruns_output_follows_in_its_widget_as_it_comes_and_once(
        kernel: tuple[Any, Path], tmp_path: Path) -> None:
    """After the widget's Rerun click, and after ``rerun()`` in a cell, the rerun's output
    comes into its widget while it runs, as a first run's comes into its cell; its fetch
    (the rerun's Fetch button, ``%hpc_fetch``) shows it nowhere a second time."""
    client, _ = kernel
    mark, gate = tmp_path / "ran once", tmp_path / "gate"
    models: dict[str, dict[str, Any]] = {}
    cells = [Cell(client, "data = list(range(10))", models)]
    cells[0].finish()
    sent = Cell(client, "%%sbatch\n" + FAILS_FIRST.format(mark=str(mark), gate=str(gate)),
                models)
    cells.append(sent)
    sent.finish()
    [first] = re.findall(r"%hpc_fetch (\d+)", sent.printed)
    try:
        offered = until(sent, lambda: next((b for label, b in job_parts(models, first).items()
                                            if label.startswith("Rerun")), None),
                        120, "the failed job's widget offered no Rerun")
        click(client, offered)
        clicked = until(sent, lambda: next(iter(re.findall(
            r"running again as job <code>(\d+)</code>",
            " ".join(str(m.get("value", "")) for m in models.values()))), None),
                        60, "the click submitted no rerun")
        by_hand = Cell(client, f"import hpc_magics\nagain = hpc_magics.job({first!r}).rerun()\n"
                               "print('by hand', again.job_id)\nagain", models)
        cells.append(by_hand)
        by_hand.finish()
        assert by_hand.status == "ok", by_hand.printed
        [again] = re.findall(r"by hand (\d+)", by_hand.printed)
        for rerun in (clicked, again):  # each at its gate: it runs, its output is in
            until(by_hand, lambda r=rerun: "before the gate" in live_text(models, r), 120,
                  f"rerun {rerun}'s output did not come into its widget while it ran")
    finally:
        gate.touch()
    for rerun in (clicked, again):
        until(by_hand, lambda r=rerun: "after the gate" in live_text(models, r), 120,
              f"rerun {rerun}'s output stopped coming")
    fetch = until(by_hand, lambda: job_parts(models, clicked).get("Fetch"), 60,
                  f"rerun {clicked} offered no Fetch")
    click(client, fetch)
    until(by_hand, lambda: any("now in the notebook" in str(m.get("value", ""))
                               for m in models.values()), 30, "the Fetch click said nothing")
    fetched = Cell(client, f"%hpc_fetch --wait {again}\nprint('the total is', total)", models)
    cells.append(fetched)
    fetched.finish()
    assert fetched.status == "ok" and "the total is 45" in fetched.printed, fetched.printed
    # each rerun's output once, in its live view: not in its log's tail, the Fetch's
    # message or the fetching cell
    shown = [*(str(m.get("value", "")) for m in models.values()),
             *(o.get("text", "") for m in models.values() for o in m.get("outputs", ())),
             *(cell.printed for cell in cells)]
    assert sum(text.count("after the gate") for text in shown) == 2, shown
