"""Drill: the kernel restarts (or dies) while its job runs. A new kernel finds the job
again from its folder with ``hpc_magics.job(ID)``, at once, and gets every result."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(180)]

SUBMIT = """%load_ext hpc_magics
%hpc_resources --profile lab --backend slurm -t 5
"""
CELL = """%%sbatch
import time
time.sleep(6)
answer = sum(range(10))
"""
REATTACH = """%load_ext hpc_magics
import time, hpc_magics
started = time.monotonic()
handle = hpc_magics.job({job!r})
state = handle.state
print("reattached in", round(time.monotonic() - started, 3), "s; state", state)
"""


@pytest.fixture
def kernel(tmp_path: Path, slurm_cluster: object) -> Iterator[KernelManager]:
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(tmp_path), env={
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PATH": _path(),
        "PYTHONPATH": _pythonpath(), "HOME": str(Path.home()),
        # the one-host cluster's setting (tests/conftest.py): a clone under /tmp is seen
        **{k: v for k, v in os.environ.items() if k == "HPC_MAGICS_NODES_SHARE_TMP"}})
    yield manager
    manager.shutdown_kernel(now=True)


def _path() -> str:
    import os

    return os.environ["PATH"]


def _pythonpath() -> str:
    import os

    import hpc_magics

    parent = str(Path(hpc_magics.__file__).resolve().parent.parent)
    return ":".join(p for p in [parent, *os.environ.get("PYTHONPATH", "").split(":")] if p)


def run(manager: KernelManager, code: str, timeout: float = 60) -> str:
    """Execute ``code`` in the kernel; its stream output and errors as text."""
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        said: list[str] = []

        def keep(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                said.append(content["text"])
            elif message["msg_type"] == "error":
                said.append("\n".join(content["traceback"]))

        client.execute_interactive(code, timeout=timeout, output_hook=keep)
        return "".join(said)
    finally:
        client.stop_channels()


def test_a_new_kernel_reattaches_to_a_running_job(kernel: KernelManager) -> None:
    run(kernel, SUBMIT)
    said = run(kernel, CELL)
    found = re.search(r"%hpc_fetch (\d+)", said)
    assert found, said
    job = found.group(1)

    kernel.restart_kernel(now=True)  # the running job is not the kernel's to lose
    said = run(kernel, REATTACH.format(job=job))
    # found from its folder, with the state Slurm or the folder gives (how fast: a speed
    # claim the shared machine cannot hold a test to; the line says it for the log)
    assert re.search(r"reattached in [\d.]+ s; state (PENDING|RUNNING|COMPLETED)", said), said

    started = time.monotonic()
    said = run(kernel, "handle.wait(timeout=120)\n%hpc_fetch " + job + "\nprint('answer', answer)",
               timeout=150)
    assert "answer 45" in said, said
    assert time.monotonic() - started < 120
