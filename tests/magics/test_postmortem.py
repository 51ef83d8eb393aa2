"""``%debug`` after a ``%%sbatch`` cell failed on the node, in a real kernel driven as a front
end drives it (its stdin answered with debugger commands): it stops at the node's failing
line, ``up``/``p`` see the node's frames and values as they were there, a local that did not
pickle is named with its type; ``%tb`` and ``%xmode`` show the node's traceback. On the
local executor and on the test cluster alike (the same job-folder path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

# locals in two frames; a lock and a generator that cannot pickle
FAILING = """%%sbatch --wait
import threading

def inner(v):
    lock = threading.Lock()
    gen = (i for i in range(3))
    w = v + 1
    return w / 0

x = 41
y = {"a": 1}
z = inner(x)
"""
@pytest.fixture(params=["local", "slurm"])
def kernel(request: pytest.FixtureRequest, slurm_cluster: Any, tmp_path: Path,
           real_kernel: Any) -> Iterator[Any]:
    """A real kernel sending cells to the given backend."""
    with real_kernel(tmp_path / "jobs", tmp_path / "runtime", request.param) as client:
        yield client


def run(client: Any, code: str, answers: tuple[str, ...] = ()) -> tuple[str, str]:
    """Execute ``code``; each input it asks for gets the next answer. The reply's status
    and everything the cell printed, tracebacks included (colours taken out)."""
    import re

    printed: list[str] = []
    left = list(answers)

    def output(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            printed.append(content["text"])
        elif msg["msg_type"] == "error":
            printed.append("\n".join(content["traceback"]))

    def answer(msg: dict[str, Any]) -> None:
        client.input(left.pop(0) if left else "q")

    reply = client.execute_interactive(code, timeout=240, allow_stdin=bool(answers),
                                       output_hook=output, stdin_hook=answer)
    return reply["content"]["status"], re.sub(r"\x1b\[[0-9;]*m", "", "".join(printed))


def test_debug_inspects_the_node_frames_and_their_values(kernel: Any) -> None:
    status, shown = run(kernel, FAILING)
    assert status == "error"
    assert "return w / 0" in shown and "z = inner(x)" in shown, shown

    _, debugged = run(kernel, "%debug", ("p w", "p lock", "up", "p x", "p y", "q"))
    # it stops at the failing line on the node, in the function's frame
    assert "inner()" in debugged and "return w / 0" in debugged, debugged
    # in the order asked (iopub and stdin are separate channels: no finer split is sure)
    assert in_order(debugged, "\n42\n", "<not kept on the node: _thread.lock",
                    "---> 11 z = inner(x)", "\n41\n", "{'a': 1}"), debugged
    # the locals that did not pickle, named with their type under the traceback
    assert "lock (_thread.lock" in shown and "gen (builtins.generator" in shown, shown


def in_order(text: str, *pieces: str) -> bool:
    at = 0
    for piece in pieces:
        at = text.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def test_debug_after_the_widgets_fetch_button(kernel: Any) -> None:
    """A button's callback never reaches IPython's exception handling: the fetch itself
    leaves the node's frames where %debug and %tb look."""
    status, said = run(kernel, FAILING.replace("%%sbatch --wait", "%%sbatch"))
    assert status == "ok", said
    # the cell's widget, as the notebook shows it; its Fetch button clicked once the job ended
    status, clicked = run(kernel, (
        "import hpc_magics\n"
        "from hpc_magics.magics.widget_monitor import MONITOR\n"
        "h = hpc_magics.job()\nh.wait()\n"
        "[widget] = [w for w in MONITOR._widgets if w.handle.job_id == h.job_id]\n"
        "widget.fetch_button.click()\nprint(widget.message.value)"))
    assert status == "ok" and "ZeroDivisionError" in clicked, clicked
    _, debugged = run(kernel, "%debug", ("p w", "up", "p x", "q"))
    assert in_order(debugged, "return w / 0", "\n42\n", "z = inner(x)", "\n41\n"), debugged
    _, shown = run(kernel, "%tb")
    assert "return w / 0" in shown and "ZeroDivisionError" in shown, shown


def test_tb_and_xmode_show_the_node_traceback(kernel: Any) -> None:
    run(kernel, FAILING)
    _, plain = run(kernel, "%xmode Plain\n%tb")
    assert "z = inner(x)" in plain and "return w / 0" in plain, plain
    assert "ZeroDivisionError" in plain and "run_cell_magic" not in plain, plain
    _, verbose = run(kernel, "%tb Verbose")
    assert "w = 42" in verbose, verbose  # the node's value, beside its line
