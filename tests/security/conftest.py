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
from kernel.conftest import kernel_prefix, provisioner_registered, started  # noqa: F401
from magics.conftest import shell  # noqa: F401 - the fixture, for these tests too
from server.conftest import local_server  # noqa: F401 - the fixture, for these tests too

from hpc_magics.scheduler import commands

INTRUDER = "hpcuser2"


@dataclass(frozen=True)
class Intruder:
    """The other test user: ``runuser`` as root, the sudo rule of scripts/run-tests as
    hpcuser1. Root refuses foreign files just the same, so most checks run as either."""

    name: str = INTRUDER

    def prefix(self) -> list[str]:
        return ["runuser", "-u", self.name, "--"] if os.geteuid() == 0 else \
            ["sudo", "-n", "-u", self.name, "--"]

    def run(self, *argv: str, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.prefix(), *argv], capture_output=True, text=True,
                              check=False, timeout=timeout, env=commands.scrubbed_environment())
        if check and done.returncode != 0:
            pytest.fail(f"as {self.name}: {' '.join(argv)}: {done.stderr.strip()}",
                        pytrace=False)
        return done

    def start(self, *argv: str) -> subprocess.Popen[str]:
        """``argv`` as them, left running: its stdin, stdout and stderr are pipes."""
        return subprocess.Popen([*self.prefix(), *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=commands.scrubbed_environment())


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
