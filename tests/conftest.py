"""Fixtures shared by the whole suite. Topic fixtures go in subfolder conftest files."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from hpc_magics.core.jobs import normalize_state
from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parent.parent
# the docs' generator of the reference page, a tool of the docs, not of the package
sys.path.insert(0, str(REPO_ROOT / "docs" / "_ext"))

# The default test cluster's nodes run on this host and share its /tmp (pytest's tmp_path):
# the product's refusal of login-only paths is for sites, and for the --release clusters
# (hosts apart), where scripts/slurm-cluster exec sets HPC_MAGICS_RELEASE.
if not os.environ.get("HPC_MAGICS_RELEASE"):
    os.environ.setdefault("HPC_MAGICS_NODES_SHARE_TMP", "1")

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
    # A drill stops daemons or nodes under everyone's feet: `serial`, so that
    # scripts/run-tests runs it alone, never beside the other cluster tests; one marked
    # `no_outage` (a job's own fault, such as its time limit) runs beside them.
    for item in items:
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)
        if item.get_closest_marker("drills") is not None and \
                item.get_closest_marker("no_outage") is None:
            item.add_marker(pytest.mark.serial)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _slow_files_first(items)


# ---------------------------------------------------------------- corpus cases
# The corpus's third-party files (notebooks, job scripts) are never committed: a clone has
# them only after scripts/corpus-from-mirrors. Their cases (marked ``corpus_absent`` at
# collection) are not run, and the summary says how many: never skips in a green line.
CORPUS_NOT_RUN = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)  # after -m and -k: count only the cases they would run
def _corpus_cases_absent(config: pytest.Config, items: list[pytest.Item]) -> None:
    absent = [item for item in items if item.get_closest_marker("corpus_absent")]
    if absent:
        items[:] = [item for item in items if item.get_closest_marker("corpus_absent") is None]
        config.hook.pytest_deselected(items=absent)
    _note_corpus_not_run(config, len(absent))


class _CorpusCases:
    pytest_collection_modifyitems = staticmethod(_corpus_cases_absent)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_CorpusCases(), "hpc-magics-corpus-cases")


def _note_corpus_not_run(config: pytest.Config, count: int) -> None:
    config.stash[CORPUS_NOT_RUN] = max(config.stash.get(CORPUS_NOT_RUN, 0), count)
    sent = getattr(config, "workeroutput", None)  # a pytest-xdist worker tells its controller
    if sent is not None:
        sent["corpus_not_run"] = config.stash[CORPUS_NOT_RUN]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist's controller: every worker collects every case, so the most any saw."""
    output = getattr(node, "workeroutput", {})
    _note_corpus_not_run(node.config, int(output.get("corpus_not_run", 0)))  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    count = config.stash.get(CORPUS_NOT_RUN, 0)
    if count:
        terminalreporter.write_sep(
            "=", f"corpus: {count} cases not run: files absent, run scripts/corpus-from-mirrors "
                 "(tests/corpus/SOURCES.md says where they come from)", yellow=True)


def _slow_files_first(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (--dist loadfile hands out files in this order): the files with a
    test marked `slow` first, so that the phase does not end waiting on one of them. Each
    file's tests keep their order; every worker sorts alike (xdist requires it)."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    first = {item.path: index for index, item in enumerate(items)}
    items.sort(key=lambda item: (item.path not in slow_files, first[item.path]))


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """The test cluster, usable; tests using it ERROR if it is not.

    As root it is brought up once per session. As an ordinary user (scripts/run-tests
    runs the suite as hpcuser1) it must be up already: it is checked, and started through
    the sudo rule of scripts/run-tests when that rule is there.
    """
    if os.geteuid() == 0:
        _run_cluster_script(["up"])
        return SlurmCluster()
    status = subprocess.run(["bash", str(SLURM_CLUSTER_SCRIPT), "status"], capture_output=True,
                            text=True, timeout=60, env=commands.scrubbed_environment(),
                            check=False)
    if status.returncode != 0:
        if not as_root_allowed():
            pytest.fail(f"the Slurm test cluster is not usable and {current_user()} may not "
                        "start it: run `scripts/slurm-cluster up` as root (scripts/run-tests "
                        f"does):\n{status.stdout}{status.stderr}", pytrace=False)
        _run_cluster_script(["up"], as_root=True)
    return SlurmCluster()


def _run_cluster_script(args: list[str], as_root: bool = False) -> None:
    argv = [*ROOT_PREFIX, str(SLURM_CLUSTER_SCRIPT), *args] if as_root else \
        ["bash", str(SLURM_CLUSTER_SCRIPT), *args]
    name = f"scripts/slurm-cluster {' '.join(args)}"
    try:
        started = subprocess.run(argv, capture_output=True, text=True,
                                 timeout=CLUSTER_UP_TIMEOUT_S,
                                 env=commands.scrubbed_environment(), check=False)
    except subprocess.TimeoutExpired as timed_out:
        output = _text(timed_out.stdout) + _text(timed_out.stderr)
        pytest.fail(f"{name} did not finish within {CLUSTER_UP_TIMEOUT_S}s:\n{output}",
                    pytrace=False)
    if started.returncode != 0:
        pytest.fail(f"{name} failed (exit {started.returncode}):\n"
                    f"{started.stdout}{started.stderr}", pytrace=False)


# ------------------------------------------------------------ real users (not root)
# scripts/slurm-cluster creates them; scripts/run-tests runs the suite as the first and
# installs a sudo rule: the first may run scripts/slurm-cluster as root, any command as
# the second.
TEST_USER = "hpcuser1"
SECOND_USER = "hpcuser2"
PROJECT_GROUP = "hpcproj"
ROOT_PREFIX = ("sudo", "-n", "--")
SUDO_TIMEOUT_S = 30


def current_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def as_root_allowed() -> bool:
    """The sudo rule of scripts/run-tests lets this user run scripts/slurm-cluster."""
    if shutil.which("sudo") is None:
        return False
    probe = subprocess.run(["sudo", "-n", "-l", str(SLURM_CLUSTER_SCRIPT)],
                           capture_output=True, timeout=SUDO_TIMEOUT_S, check=False)
    return probe.returncode == 0


@dataclass(frozen=True)
class OtherUser:
    """Runs commands as the second test user (``sudo -n -u``, or ``runuser`` as root)."""

    name: str

    def prefix(self) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", self.name, "--"]
        return ["sudo", "-n", "-u", self.name, "--"]

    def run(self, *argv: str, timeout: float = 60, cwd: Path | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.prefix(), *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, check=False,
                              env=commands.scrubbed_environment())
        if check and done.returncode != 0:
            pytest.fail(f"as {self.name}: {' '.join(argv)} failed (exit {done.returncode}): "
                        f"{(done.stderr or done.stdout).strip()}", pytrace=False)
        return done


@pytest.fixture(scope="session")
def unprivileged_user() -> str:
    """This user's name; SKIPS a test run as root (root may cancel anyone's job)."""
    if os.geteuid() == 0:
        pytest.skip("needs an ordinary user: scripts/run-tests runs the suite as hpcuser1")
    return current_user()


@pytest.fixture(scope="session")
def second_user(unprivileged_user: str, slurm_cluster: SlurmCluster) -> OtherUser:
    """The other test user, to act as; fails clearly without the sudo rule."""
    other = OtherUser(SECOND_USER if unprivileged_user != SECOND_USER else TEST_USER)
    probe = subprocess.run([*other.prefix(), "true"], capture_output=True, text=True,
                           timeout=SUDO_TIMEOUT_S, check=False)
    if probe.returncode != 0:
        pytest.fail(f"{unprivileged_user} may not act as {other.name} "
                    f"({probe.stderr.strip()}): run the suite with scripts/run-tests, which "
                    "installs the sudo rule", pytrace=False)
    return other


def _test_assoc(*args: str) -> None:
    release = os.environ.get("HPC_MAGICS_RELEASE")
    if release and os.geteuid() != 0:  # no sudo rule on a --release cluster's login host
        pytest.skip(f"sacctmgr changes need root on release {release}'s cluster "
                    "(scripts/slurm-cluster --release R exec --user root)")
    prefix = ["bash"] if os.geteuid() == 0 else [*ROOT_PREFIX]
    done = subprocess.run([*prefix, str(SLURM_CLUSTER_SCRIPT), "test-assoc", *args],
                          capture_output=True, text=True, timeout=90, check=False,
                          env=commands.scrubbed_environment())
    if done.returncode != 0:
        pytest.fail(f"scripts/slurm-cluster test-assoc {' '.join(args)}: "
                    f"{(done.stderr or done.stdout).strip()}", pytrace=False)


class ThrowawayAccount(Protocol):
    def __call__(self, name: str, user: str, limit: str | None = None) -> str: ...


@pytest.fixture
def throwaway_account(slurm_cluster: SlurmCluster) -> Iterator[ThrowawayAccount]:
    """``throwaway_account(name, user, limit=None) -> name``: an account and a QOS ``name``
    (``hpcm_test_...``) with ``user`` associated and, with ``limit`` (``billing=60``), a
    GrpTRESMins on the account; made as root by ``scripts/slurm-cluster test-assoc`` (the
    sudo rule of scripts/run-tests when not root), and always removed after the test."""
    made: list[str] = []

    def add(name: str, user: str, limit: str | None = None) -> str:
        made.append(name)  # first: a half-made account is removed too
        _test_assoc("add", name, user, *([limit] if limit else []))
        return name

    try:
        yield add
    finally:
        for name in made:
            _test_assoc("remove", name)


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
