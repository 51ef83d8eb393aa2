"""Fixtures for the Slurm kernel: its provisioner visible to jupyter_client, a kernelspec in
a temporary prefix, and a look at squeue/sacct by job name."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from jupyter_client import BlockingKernelClient, KernelManager

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


def jobs_named_once_accounted(name: str, since: float, job_id: str) -> list[str]:
    """``jobs_named`` once accounting knows ``job_id`` (it lags the scheduler by seconds
    under load), or after 30 s."""
    deadline = time.monotonic() + 30
    while job_id not in (named := jobs_named(name, since)) and time.monotonic() < deadline:
        time.sleep(1)
    return named


@pytest.fixture
def user_allocation(slurm_cluster: object) -> Iterator[str]:
    """An allocation of the user's own (a sleeping batch job), as ``--jobid`` kernels are
    started in; cancelled after the test (by the test's own scancel, as the user would)."""
    answer = commands.run(["sbatch", "--parsable", "-J", f"user-alloc-{os.getpid()}", "-t",
                           "5", "-o", "/dev/null", "--wrap", "sleep 300"], timeout=60)
    assert answer.ok, answer.stderr
    allocation = answer.stdout.strip().split(";")[0]
    yield allocation
    commands.run(["scancel", allocation], timeout=30)


READY_S = 120
GONE_WITHIN_S = 15.0


def run_code(client: BlockingKernelClient, code: str, timeout: float = 60) -> tuple[str, Any]:
    """The cell's printed output and its reply's content."""
    printed: list[str] = []

    def keep(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])

    reply = client.execute_interactive(code, output_hook=keep, timeout=timeout)
    return "".join(printed), reply["content"]


def wait_for_output(client: BlockingKernelClient, msg_id: str, text: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = client.get_iopub_msg(timeout=30)
        if (message["parent_header"].get("msg_id") == msg_id
                and message["msg_type"] == "stream" and text in message["content"]["text"]):
            return
    pytest.fail(f"the cell did not print {text!r} within 30 s", pytrace=False)


def wait_until_gone(job_id: str, target: str | None = None) -> float:
    """Seconds until squeue no longer lists the job (or ``target``, a step, in ``-s``)."""
    started = time.monotonic()
    while time.monotonic() - started < 60:
        if target is None:
            listed = squeue_ids(job_id)
        else:
            answer = commands.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i"], timeout=20)
            listed = [line.strip() for line in answer.stdout.splitlines()
                      if line.strip() == target]
        if not listed:
            return time.monotonic() - started
        time.sleep(0.5)
    pytest.fail(f"{target or job_id} still in squeue after 60 s", pytrace=False)


@pytest.fixture
def started(slurm_cluster: object) -> Iterator[Started]:
    """Kernel managers the test started; their clients are closed (else their sockets keep
    reconnecting to the ended kernel's ports for the rest of the worker's run, and reach
    whatever listens there next: a job's srun logged "Insane message length"), and any
    kernel still alive is shut down (its job too)."""
    managers = Started()
    yield managers
    for client in managers.clients:
        client.stop_channels()
    for manager in managers:
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)


class Started(list[KernelManager]):
    """The managers a test started, with the clients made for them."""

    def __init__(self) -> None:
        super().__init__()
        self.clients: list[BlockingKernelClient] = []


def start(name: str, managers: Started) -> tuple[KernelManager, BlockingKernelClient]:
    manager = KernelManager(kernel_name=name)
    managers.append(manager)
    manager.start_kernel()
    client = manager.client()
    managers.clients.append(client)
    client.start_channels()
    client.wait_for_ready(timeout=READY_S)
    return manager, client


def interrupts_and_lives_on(manager: KernelManager, client: BlockingKernelClient) -> None:
    """Interrupting a running cell stops it with KeyboardInterrupt; the kernel lives on."""
    msg_id = client.execute("print('sleeping', flush=True); import time; time.sleep(60)")
    wait_for_output(client, msg_id, "sleeping")  # the cell runs: now interrupt it
    interrupted_at = time.monotonic()
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - interrupted_at < 30  # not the 60 s of the sleep

    # the kernel lives on (asked through the reply, not the output stream: a stream message
    # right after an interrupt can arrive after the cell's idle status). ipykernel aborts
    # the requests that reach it while it still clears its queue after the error: "aborted"
    # is then its answer, and asking again is what a user's next cell does
    for _ in range(5):
        reply = client.execute_interactive("answer = 6 * 7", user_expressions={"a": "answer"},
                                           timeout=60)
        if reply["content"]["status"] != "aborted":
            break
        time.sleep(0.2)
    assert reply["content"]["user_expressions"]["a"]["data"]["text/plain"] == "42"
