"""Security checks as tests: another user to act as, a folder both may write, and the
real jupyter servers of tests/server."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from magics.conftest import shell  # noqa: F401 - the fixture, for these tests too
from server.conftest import local_server  # noqa: F401 - the fixture, for these tests too

from hpc_magics.scheduler import commands

INTRUDER = "hpcuser2"


@dataclass(frozen=True)
class Intruder:
    """The other test user: ``runuser`` as root, the sudo rule of scripts/run-tests as
    hpcuser1. Root refuses foreign files just the same, so most checks run as either."""

    name: str = INTRUDER

    def run(self, *argv: str, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", self.name, "--"] if os.geteuid() == 0 else \
            ["sudo", "-n", "-u", self.name, "--"]
        done = subprocess.run([*prefix, *argv], capture_output=True, text=True, check=False,
                              timeout=timeout, env=commands.scrubbed_environment())
        if check and done.returncode != 0:
            pytest.fail(f"as {self.name}: {' '.join(argv)}: {done.stderr.strip()}",
                        pytrace=False)
        return done


@pytest.fixture
def intruder(slurm_cluster: object) -> Intruder:
    other = Intruder()
    probe = other.run("true", check=False)
    if probe.returncode != 0:
        pytest.fail(f"cannot act as {other.name}: {probe.stderr.strip()} (run the suite "
                    "with scripts/run-tests, which installs the sudo rule)", pytrace=False)
    return other


@pytest.fixture
def shared_folder(intruder: Intruder) -> Iterator[Path]:
    """A folder both users may write (a careless project folder, on purpose)."""
    folder = Path(tempfile.mkdtemp(prefix="hpc-magics-security-"))
    folder.chmod(0o1777)
    yield folder
    intruder.run("find", str(folder), "-depth", "-user", intruder.name, "-delete", check=False)
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False, timeout=60)
