"""Fixtures shared by the whole suite. Topic fixtures go in subfolder conftest files."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from hpc_magics.core.jobs import normalize_state
from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- the Slurm test cluster
SLURM_CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "slurm-cluster"
# A cold start installs the Debian packages first (~30 s); a running cluster answers in ~1 s.
CLUSTER_UP_TIMEOUT_S = 600


@dataclass(frozen=True)
class SlurmCluster:
    """The single-host cluster of scripts/slurm-cluster (profile ``lab``)."""

    profile: str = "lab"
    nodes: tuple[str, ...] = ("c1", "c2")
    default_partition: str = "debug"
    partitions: tuple[str, ...] = ("debug", "long")
    gpu_type: str = "v100"
    gpus_per_node: int = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test that needs the cluster carries the `slurm` marker: `-m "not slurm"` works.
    for item in items:
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """Bring the test cluster up once per session; tests using it ERROR if it cannot start."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster needs root: run the suite as root "
                    "(scripts/run-tests)", pytrace=False)
    try:
        started = subprocess.run(
            ["bash", str(SLURM_CLUSTER_SCRIPT), "up"],
            capture_output=True, text=True, timeout=CLUSTER_UP_TIMEOUT_S,
            env=commands.scrubbed_environment(), check=False,
        )
    except subprocess.TimeoutExpired as timed_out:
        output = _text(timed_out.stdout) + _text(timed_out.stderr)
        pytest.fail(f"scripts/slurm-cluster up did not finish within {CLUSTER_UP_TIMEOUT_S}s:\n"
                    f"{output}", pytrace=False)
    if started.returncode != 0:
        pytest.fail(f"scripts/slurm-cluster up failed (exit {started.returncode}):\n"
                    f"{started.stdout}{started.stderr}", pytrace=False)
    return SlurmCluster()


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


class SacctState(Protocol):
    def __call__(self, job_id: int | str, until: Collection[str] | None = None,
                 timeout: float = 10.0) -> str: ...


@pytest.fixture
def sacct_state(slurm_cluster: SlurmCluster) -> SacctState:
    """A callable ``sacct_state(job_id, until=None, timeout=10.0) -> str``.

    Returns the job's normalised state as sacct reports it (``CANCELLED by 0`` becomes
    ``CANCELLED``). sacct lags the scheduler by 0.2-1.5 s, so it polls: until sacct knows
    the job at all, or, with ``until`` (a collection of states), until the state is one of
    them. Fails the test with the last answer if that does not happen within ``timeout``.
    """

    def poll(job_id: int | str, until: Collection[str] | None = None,
             timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        state = ""
        while True:
            answer = commands.run(
                ["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)], timeout=10)
            lines = [line.strip() for line in answer.stdout.splitlines() if line.strip()]
            state = normalize_state(lines[0]) if answer.ok and lines else ""
            if state and (until is None or state in until):
                return state
            if time.monotonic() >= deadline:
                wanted = f"one of {sorted(until)}" if until else "any state"
                problem = "" if answer.ok else f" ({answer.first_error_line()})"
                pytest.fail(f"sacct said {state or 'nothing'} about job {job_id} for {timeout}s, "
                            f"expected {wanted}{problem}", pytrace=False)
            time.sleep(0.2)

    return poll
