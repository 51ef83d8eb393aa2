"""Fixtures for the Slurm kernel: its provisioner visible to jupyter_client, a kernelspec in
a temporary prefix, and a look at squeue/sacct by job name."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from hpc_magics.cli import main as cli_main
from hpc_magics.kernel.spec import PROVISIONER_NAME
from hpc_magics.scheduler import commands

GROUP = "jupyter_client.kernel_provisioners"


@pytest.fixture(scope="session")
def provisioner_registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """jupyter_client finds the provisioner by its entry point (pyproject.toml). An install
    of the package made before that entry point existed lacks it: then a dist-info of one
    entry point, this one, is put on the path (for this process and the jobs it starts)."""
    if any(e.name == PROVISIONER_NAME for e in entry_points(group=GROUP)):
        yield
        return
    folder = tmp_path_factory.mktemp("entry-point")
    info = folder / "hpc_magics_kernel_provisioner-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hpc-magics-kernel-provisioner"
                                   "\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n{PROVISIONER_NAME} = hpc_magics.kernel.provisioner:SlurmProvisioner\n")
    sys.path.insert(0, str(folder))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), old) if p)
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def kernel_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  provisioner_registered: None) -> Path:
    """A prefix for kernelspecs, on JUPYTER_PATH for this test only."""
    prefix = tmp_path / "prefix"
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    return prefix


def install(name: str, prefix: Path, *options: str) -> int:
    return cli_main(["kernel", "install", name, "--prefix", str(prefix), *options])


def kernelspec_file(prefix: Path, name: str) -> Path:
    return prefix / "share" / "jupyter" / "kernels" / name / "kernel.json"


def squeue_ids(job_id: str) -> list[str]:
    """The entries squeue lists for one job id (asked directly: the test's own look)."""
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%i"], timeout=20)
    return [line.strip() for line in answer.stdout.splitlines() if line.strip()]


def jobs_named(name: str, since: float) -> list[str]:
    """Jobs of this name squeue or sacct knows, submitted since ``since`` (epoch seconds)."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 1))
    queued = commands.run(["squeue", "-h", "-n", name, "-o", "%i"], timeout=20)
    accounted = commands.run(["sacct", "-n", "-X", "-P", "-o", "JobID", "--name", name,
                              "-S", start], timeout=20)
    return sorted({line.strip() for answer in (queued, accounted)
                   for line in answer.stdout.splitlines() if line.strip()})
