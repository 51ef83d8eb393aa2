"""A real IPython shell with hpc_magics loaded, and a private job folder per test."""

from __future__ import annotations

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
