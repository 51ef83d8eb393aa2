"""The --release clusters of scripts/slurm-cluster look like a real site's.

Each release (Debian's Slurm 22.05, 24.11, 26.05 in roots of their own) runs with its login
host and compute nodes apart (own hostnames and /tmp, shared home) and cgroups confining
jobs. These tests drive each release from this machine through
``scripts/slurm-cluster --release R exec`` (as root, or through the sudo rule of
scripts/run-tests), as the test user. A release whose cluster is not up is skipped, naming
the command that starts it; ``HPC_MAGICS_RELEASES=24.11,26.05`` limits the releases tried.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parents[2]
SLURM_CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "slurm-cluster"
RELEASES = ("22.05", "24.11", "26.05")
TEST_USER = "hpcuser1"
EXEC_TIMEOUT_S = 180

pytestmark = pytest.mark.slurm


def wanted_releases() -> tuple[str, ...]:
    """HPC_MAGICS_RELEASES's releases (set but empty: none, as scripts/run-tests); unset: all."""
    listed = os.environ.get("HPC_MAGICS_RELEASES")
    if listed is None:
        return RELEASES
    return tuple(r.strip() for r in listed.split(",") if r.strip())


def root_prefix() -> list[str]:
    return [] if os.geteuid() == 0 else ["sudo", "-n", "--"]


def cluster_script(release: str, *args: str, cwd: Path | None = None,
                   timeout: float = EXEC_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    argv = [*root_prefix(), str(SLURM_CLUSTER_SCRIPT), "--release", release, *args]
    env = commands.scrubbed_environment()
    env.pop("HPC_MAGICS_NODES_SHARE_TMP", None)  # tests/conftest.py's, for this host only
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env, check=False)


@pytest.fixture(scope="module", params=RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if os.environ.get("HPC_MAGICS_RELEASE"):
        pytest.skip(f"already inside release {os.environ['HPC_MAGICS_RELEASE']}'s cluster: "
                    "these tests drive the releases from the machine itself")
    if name not in wanted_releases():
        pytest.skip(f"release {name} not in HPC_MAGICS_RELEASES="
                    f"{os.environ.get('HPC_MAGICS_RELEASES')}")
    if os.geteuid() != 0:
        probe = subprocess.run(["sudo", "-n", "-l", str(SLURM_CLUSTER_SCRIPT)],
                               capture_output=True, timeout=30, check=False)
        if probe.returncode != 0:
            pytest.skip("needs root or the sudo rule of scripts/run-tests "
                        "(the release clusters live in chroots and namespaces)")
    status = cluster_script(name, "status")
    if status.returncode != 0:
        pytest.skip(f"release {name}'s cluster is not up: run "
                    f"`scripts/slurm-cluster --release {name} up` as root")
    return name


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder in the test user's home: shared by the login host and the nodes."""
    home = Path(os.path.expanduser(f"~{TEST_USER}"))
    with tempfile.TemporaryDirectory(dir=home, prefix=".test-release-") as folder:
        if os.geteuid() == 0:
            os.chown(folder, *_ids(TEST_USER))
        yield Path(folder)


def _ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def login_pytest(shared_dir: Path, *tests: str) -> list[str]:
    """pytest of the clone's TESTS, to start in SHARED_DIR on a login host: not in the
    clone, whose path under /tmp (CI's) is a login-only working directory there, which
    every cell would be refused."""
    # -X faulthandler: a crash, even at exit after the tests, prints every thread's stack
    return ["python", "-X", "faulthandler", "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--rootdir={REPO_ROOT}",
            f"-c={REPO_ROOT / 'pyproject.toml'}", f"--basetemp={shared_dir / 'pytest'}",
            *(str(REPO_ROOT / t) for t in tests)]


def on_login(release: str, script: str, cwd: Path) -> list[str]:
    """Run a shell script on RELEASE's login host as the test user; its output lines."""
    user = [] if os.geteuid() != 0 else ["--user", TEST_USER]
    done = cluster_script(release, "exec", *user, "--", "bash", "-c", script, cwd=cwd)
    assert done.returncode == 0, f"exec on {release} failed:\n{done.stdout}{done.stderr}"
    return done.stdout.split("\n")


def test_login_and_nodes_are_hosts_apart(release: str, shared_dir: Path) -> None:
    lines = on_login(release, "hostname; srun -N2 --ntasks-per-node=1 -t1 hostname | sort",
                     shared_dir)
    login, nodes = lines[0], lines[1:3]
    assert nodes == ["c1", "c2"], lines
    assert login not in nodes and login != socket.gethostname(), lines


def test_tmp_is_per_host_and_home_is_shared(release: str, shared_dir: Path) -> None:
    name = f"hpcm-probe-{secrets.token_hex(4)}"
    script = f"""
      echo login > /tmp/{name}; echo home > {shared_dir}/{name}
      srun -N2 --ntasks-per-node=1 -t1 sh -c '
        h=$(hostname)
        test -e /tmp/{name} && echo "$h tmp seen" || echo "$h tmp absent"
        test -e {shared_dir}/{name} && echo "$h home seen" || echo "$h home absent"
        echo node > /tmp/{name}-node' | sort
      test -e /tmp/{name}-node && echo "login sees node tmp" || echo "login node tmp absent"
      rm -f /tmp/{name}
    """
    lines = [line for line in on_login(release, script, shared_dir) if line]
    assert lines == ["c1 home seen", "c1 tmp absent", "c2 home seen", "c2 tmp absent",
                     "login node tmp absent"]


def test_job_over_its_memory_ends_out_of_memory(release: str, shared_dir: Path) -> None:
    script = """
      j=$(sbatch --parsable --wait -t1 --mem=100M -o /dev/null \
          --wrap 'python3 -c "b = bytearray(400 * 1024 * 1024)"')
      for i in $(seq 30); do   # accounting lags the scheduler
        s=$(sacct -n -X -P -o State -j "$j"); case "$s" in OUT_OF_*|FAILED|COMPLETED) break ;; esac
        sleep 0.5
      done
      echo "$s"
    """
    assert on_login(release, script, shared_dir)[-2] == "OUT_OF_MEMORY"


def test_gpu_job_opens_only_its_own_device(release: str, shared_dir: Path) -> None:
    probe = ("for f in /run/slurm-fakegpu/nvidia*; do "
             "(exec 3<$f) 2>/dev/null && echo allowed || echo denied; done | sort | uniq -c")
    lines = on_login(release, f"srun -t1 --gres=gpu:v100:1 sh -c '{probe}'; echo --; "
                              f"srun -t1 sh -c '{probe}'", shared_dir)
    one_gpu, no_gpu = " ".join(lines[:lines.index("--")]), " ".join(lines[lines.index("--"):])
    assert one_gpu.split() == ["1", "allowed", "1", "denied"], lines
    assert no_gpu.split() == ["--", "2", "denied"], lines


def test_cancelled_job_leaves_no_process(release: str, shared_dir: Path) -> None:
    seconds = 3000 + secrets.randbelow(900)  # a sleep of this length is ours alone
    script = f"""
      count() {{ pgrep -c -f "^sleep {seconds}\\$" || true; }}
      j=$(sbatch --parsable -t1 -o /dev/null \
          --wrap 'setsid sleep {seconds} & nohup sleep {seconds} & sleep {seconds}')
      for i in $(seq 100); do [ "$(count)" = 3 ] && break; sleep 0.2; done
      echo "before $(count)"
      scancel "$j"
      for i in $(seq 100); do [ "$(count)" = 0 ] && break; sleep 0.2; done
      echo "after $(count)"
    """
    lines = on_login(release, script, shared_dir)
    assert lines[-3:-1] == ["before 3", "after 0"], lines


def test_nodes_see_only_their_own_processes(release: str, shared_dir: Path) -> None:
    seconds = 3000 + secrets.randbelow(900)  # a sleep of this length is ours alone
    script = f"""
      sleep {seconds} & login_sleep=$!
      srun -N2 --ntasks-per-node=1 -t1 sh -c '
        h=$(hostname)
        pgrep -f "^sleep {seconds}\\$" >/dev/null && echo "$h sees login" || echo "$h own view"
        pgrep -x slurmd >/dev/null && echo "$h sees its slurmd"' | sort
      kill "$login_sleep"
    """
    lines = [line for line in on_login(release, script, shared_dir) if line]
    assert lines == ["c1 own view", "c1 sees its slurmd", "c2 own view", "c2 sees its slurmd"]


# %%sbatch cells (a login-host /tmp file, staging, ranks) and a jupyter server in a job, run
# on the login host: pytest there, through exec, with its tmp_path in the shared home
ON_LOGIN_TESTS = {"tests/sites/test_hosts_apart_cells.py": 6,
                  "tests/server/test_server_in_job.py": 8}
ON_LOGIN_TIMEOUT_S = 900


@pytest.mark.slow
@pytest.mark.parametrize("tests", sorted(ON_LOGIN_TESTS))
def test_end_to_end_on_the_login_host(release: str, shared_dir: Path, tests: str) -> None:
    user = [] if os.geteuid() != 0 else ["--user", TEST_USER]
    done = cluster_script(release, "exec", *user, "--", *login_pytest(shared_dir, tests),
                          cwd=shared_dir, timeout=ON_LOGIN_TIMEOUT_S)
    summary = [line for line in done.stdout.split("\n") if line.strip()][-1:]
    assert done.returncode == 0 and summary and \
        summary[0].startswith(f"{ON_LOGIN_TESTS[tests]} passed in "), \
        f"{tests} on release {release}:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
