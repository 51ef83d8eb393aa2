"""A Slurm kernel is submitted through the one submission door (issue 26): its kernelspec's
request wins over the user's ``SBATCH_*`` defaults, a job for another cluster is refused
before anything exists, and sbatch runs off the Jupyter server's event loop. On the real
test cluster, with jupyter_client's kernel managers as the server uses them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from jupyter_client.ioloop import AsyncIOLoopKernelManager

from hpc_magics.core.errors import InvalidRequest
from hpc_magics.kernel.orphans import KERNELS_DIR_ENV
from hpc_magics.scheduler import commands, job_index
from hpc_magics.scheduler.cluster import cluster_name

from .conftest import Started, install, jobs_named, kernelspec_file, start

pytestmark = pytest.mark.slurm


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own folder for kernel job folders."""
    folder = tmp_path / "kernels"
    monkeypatch.setenv(KERNELS_DIR_ENV, str(folder))
    return folder


def test_the_kernelspecs_partition_and_time_beat_the_users_sbatch_defaults(
        kernel_prefix: Path, kernels: Path, started: Started,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # sbatch lets these override the script's #SBATCH lines: the door leaves them out
    monkeypatch.setenv("SBATCH_PARTITION", "debug")
    monkeypatch.setenv("SBATCH_TIMELIMIT", "3")
    assert install("lab-asked", kernel_prefix, "--profile", "lab", "-p", "long", "-t", "7") == 0
    manager, client = start("lab-asked", started)
    job_id = str(manager.provisioner.job_id)
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%P|%l"], timeout=20)
    assert answer.stdout.strip() == "long|7:00"
    # recorded as every submission is: its folder and the index know job and cluster (the
    # index's entry of this folder: a local job of the same number may be in the shared one)
    folder = manager.provisioner.folder
    assert folder.meta()["cluster"] == cluster_name()
    assert [(e.job_id, e.cluster) for e in job_index.entries()
            if e.folder == folder.path] == [(job_id, cluster_name())]
    client.stop_channels()
    manager.shutdown_kernel()


def test_a_kernel_for_another_cluster_is_refused_before_anything_is_submitted(
        kernel_prefix: Path, kernels: Path, started: Started,
        monkeypatch: pytest.MonkeyPatch) -> None:
    since = time.time()
    assert install("lab-other", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    spec_path = kernelspec_file(kernel_prefix, "lab-other")
    spec = json.loads(spec_path.read_text())
    spec["metadata"]["kernel_provisioner"]["config"]["request"]["extra"] = [["M", "other"]]
    spec_path.write_text(json.dumps(spec))
    manager = KernelManager(kernel_name="lab-other")
    started.append(manager)
    with pytest.raises(InvalidRequest) as refused:
        manager.start_kernel()
    assert str(refused.value) == ("several clusters are not supported yet: remove -M other; "
                                  f"the job goes to {cluster_name()}, the cluster you "
                                  "submit from")
    del spec["metadata"]["kernel_provisioner"]["config"]["request"]["extra"]
    spec_path.write_text(json.dumps(spec))
    monkeypatch.setenv("SBATCH_CLUSTERS", "other")
    with pytest.raises(InvalidRequest, match=r"unset SBATCH_CLUSTERS \(it is 'other'\)"):
        KernelManager(kernel_name="lab-other").start_kernel()
    assert not kernels.exists() or list(kernels.iterdir()) == []  # no job folder
    time.sleep(2)  # sacct lags the scheduler by up to 1.5 s
    assert jobs_named("kernel-lab-other", since) == []


SLOW_SBATCH = """#!/bin/sh
touch {marks}/asked
sleep 2
touch {marks}/answering
exec {real} "$@"
"""


def test_a_slow_sbatch_leaves_the_servers_event_loop_serving(
        kernel_prefix: Path, kernels: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake ``sbatch`` first on PATH, 2 s slow before it runs the real one: a fake on
    purpose, since a slow controller cannot be made on demand on the shared test cluster.
    While it is slow, a coroutine on the same loop keeps ticking (an ordering check: ticks
    fall between its start and its answer)."""
    real = shutil.which("sbatch")
    assert real, "sbatch is not installed"
    shims, marks = tmp_path / "shims", tmp_path / "marks"
    shims.mkdir()
    marks.mkdir()
    (shims / "sbatch").write_text(SLOW_SBATCH.format(marks=marks, real=real))
    (shims / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    assert install("lab-slow", kernel_prefix, "--profile", "lab", "-t", "5") == 0

    def moment() -> str:
        asked, answering = (marks / "asked").exists(), (marks / "answering").exists()
        return "in sbatch" if asked and not answering else "after" if answering else "before"

    async def scenario() -> list[str]:
        ticks: list[str] = []
        done = asyncio.Event()

        async def tick() -> None:
            while not done.is_set():
                ticks.append(moment())
                await asyncio.sleep(0.05)

        ticker = asyncio.create_task(tick())
        manager = AsyncIOLoopKernelManager(kernel_name="lab-slow")
        try:
            await manager.start_kernel()
        finally:
            done.set()
            await ticker
            if manager.has_kernel:
                await manager.shutdown_kernel(now=True)
        return ticks

    # a thread of its own: asyncio.run refuses to start under a running loop (Playwright's)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        ticks = pool.submit(asyncio.run, scenario()).result()
    assert (marks / "answering").exists()  # the kernel's sbatch went through the slow one
    assert "in sbatch" in ticks, ticks
