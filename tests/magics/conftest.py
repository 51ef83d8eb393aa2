"""A real IPython shell with hpc_magics loaded, and a private job folder per test; a real
kernel (``real_kernel``) for what only a front end sees."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.core.resources import ResourceRequest


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    ip = InteractiveShell.instance()  # a real shell, shared by the tests like a kernel's
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    jobs = tmp_path / "my jobs 'quoted'"  # hostile folder name on purpose
    magics.jobs_dir = str(jobs)
    magics.request = ResourceRequest(profile="generic")
    magics.handles.clear()
    magics.last_job = None
    del ip.user_ns["In"][1:]  # a fresh history, as in a new kernel
    ip.execution_count = 1
    saved = dict(ip.user_ns)
    yield ip
    ip.user_ns.clear()
    ip.user_ns.update(saved)


@pytest.fixture
def real_kernel() -> Callable[..., contextlib.AbstractContextManager[Any]]:
    """``with real_kernel(jobs, runtime, backend, **environ) as client``: a kernel as
    Jupyter starts one (``environ`` added to its environment: ``JPY_SESSION_NAME`` names
    its notebook), with hpc_magics loaded, its cells' job folders in ``jobs``, sending them
    to ``backend`` (slurm when not given) on the lab profile; its client, ready."""
    return _real_kernel


@contextlib.contextmanager
def _real_kernel(jobs: Path, runtime: Path, backend: str = "slurm",
                 **environ: str) -> Iterator[Any]:
    from jupyter_client.manager import KernelManager

    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **environ)
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        setup = ("%load_ext hpc_magics\n"
                 "get_ipython().magics_manager.registry['HpcMagicsKernel'].jobs_dir = "
                 f"{str(jobs)!r}\n"
                 f"%hpc_resources --profile lab --backend {backend} -t 5")
        reply = client.execute_interactive(setup, timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _job_folders(ip: Any) -> list[Path]:
    root = Path(ip.magics_manager.registry["HpcMagicsKernel"].jobs_root)
    return sorted(p for p in root.iterdir() if (p / "meta.json").exists()) if root.exists() else []


@pytest.fixture
def job_folders() -> Callable[[Any], list[Path]]:
    """``job_folders(shell)``: the job folders the shell's magics created."""
    return _job_folders


# The cells both backends run: notebook state in, results and output back.

SETUP = """
import numpy as np
import math

def scale(values, factor):
    return values * factor

class Summary:
    def __init__(self, total):
        self.total = total

data = np.arange(10, dtype=float)
"""

WORK = """
scaled = scale(data, 3)
print("sum on the node:", scaled.sum())
summary = Summary(float(scaled.sum()))
root = math.sqrt(summary.total)
root
"""

FAILING = """
def inner(x):
    return int(x) // 0

result = inner(data.sum())
"""


@pytest.fixture
def cells() -> SimpleNamespace:
    return SimpleNamespace(SETUP=SETUP, WORK=WORK, FAILING=FAILING)
