"""Drill: the jobs folder is on a full or a read-only file system (a home over quota, a
project space mounted read-only for maintenance). The cell is refused in one line before
anything is written or submitted, at once.

The file systems are real: small tmpfs mounts made by ``scripts/slurm-cluster
scratch-fs`` (as root, or through the sudo rule of scripts/run-tests).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.scheduler import commands

from .conftest import Stopwatch, admin

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(120)]


@pytest.fixture
def counting_sbatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``sbatch`` first on PATH that logs each call, then runs the real one."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = folder / "calls.log"
    real = commands.run(["sh", "-c", "command -v sbatch"], timeout=10).stdout.strip()
    (folder / "sbatch").write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\n'
                                   f'exec {shlex.quote(real)} "$@"\n')
    (folder / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return log


@pytest.fixture
def scratch(slurm_cluster: object) -> Iterator[Any]:
    """``mount(name, size_kb, mode)``: a tmpfs owned by this user; unmounted afterwards."""
    mounted: list[str] = []

    def mount(name: str, size_kb: int, mode: str = "rw") -> Path:
        name = f"{name}-{os.getpid()}"
        mounted.append(name)
        return Path(admin("scratch-fs", "mount", name, str(size_kb), mode).splitlines()[-1])

    yield mount
    for name in mounted:
        admin("scratch-fs", "umount", name)


def _fill(folder: Path) -> None:
    try:
        with open(folder / "filler", "wb", buffering=0) as stream:
            while True:
                stream.write(b"x" * 4096)
    except OSError:  # full now
        pass


@pytest.mark.parametrize("condition", ["full", "nearly full", "read-only"])
def test_a_jobs_folder_without_room_is_refused_before_submitting(
        drill_shell: Any, scratch: Any, counting_sbatch: Path, stopwatch: Stopwatch,
        condition: str) -> None:
    if condition == "read-only":
        root = scratch("readonly", 64, "ro")
    else:
        root = scratch(condition.replace(" ", ""), 64 if condition == "full" else 512)
        if condition == "full":
            _fill(root)
    magics = drill_shell.magics_manager.registry["HpcMagicsKernel"]
    magics.jobs_dir = str(root / "hpc_jobs")
    with pytest.raises(UsageError) as refused:
        stopwatch.quick("%%sbatch", lambda: drill_shell.run_cell_magic(
            "sbatch", "", "answer = 42"))
    message = str(refused.value)
    assert "\n" not in message and str(root) in message, message
    assert "HPC_MAGICS_JOBS_DIR" in message, message
    if condition == "read-only":
        assert "read-only file system" in message
    else:
        assert "MB free" in message and "free some space" in message, message
    assert not counting_sbatch.exists(), "sbatch was called"  # refused before it, not after
    assert magics.last_job is None
