"""The one lock (``jobfolder/lock.py``) where the file system has no flock: our own lock
file, quiet, taken over only from a holder that is gone.

A file system without flock is made real with an ``LD_PRELOAD`` shim whose ``flock()``
fails with ENOSYS, as Lustre mounted ``-o noflock`` answers; the processes under it are
real (a concurrency run of many processes, a ``%%sbatch`` cell on the test cluster).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.jobfolder import lock as lock_module
from hpc_magics.jobfolder.lock import FOREIGN_STALE_S, HELD_SUFFIX, Lock

TESTS = Path(__file__).resolve().parent.parent
SHIM = """
#include <errno.h>
int flock(int fd, int operation) { (void)fd; (void)operation; errno = ENOSYS; return -1; }
"""


@pytest.fixture(scope="module")
def no_flock(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process whose every ``flock()`` fails with ENOSYS."""
    folder = tmp_path_factory.mktemp("shim")
    (folder / "noflock.c").write_text(SHIM)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "noflock.so"),
                    str(folder / "noflock.c")], check=True, capture_output=True, timeout=120)
    env = {**os.environ, "LD_PRELOAD": str(folder / "noflock.so")}
    probe = subprocess.run(
        [sys.executable, "-c", "import fcntl, sys; fcntl.flock(sys.stdin.fileno(), "
         "fcntl.LOCK_EX)"], env=env, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, check=False)
    assert "Function not implemented" in probe.stderr, probe.stderr  # the shim is in force
    return env


def test_the_concurrency_test_passes_without_flock_and_says_nothing(
        no_flock: dict[str, str], tmp_path: Path) -> None:
    """Six processes update one meta.json 1800 times, a reader races them: nothing lost,
    and not one warning printed (``-s``: the spawned processes' stderr is ours to read;
    filelock 4.3 printed "UserWarning: flock not supported on this filesystem" here)."""
    test = ("jobfolder/test_meta_concurrency.py"
            "::test_many_processes_update_one_meta_and_nothing_is_lost")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'base'}", str(TESTS / test)],
        env=no_flock, capture_output=True, text=True, timeout=600, cwd=TESTS.parent,
        check=False)
    said = run.stdout + run.stderr
    assert run.returncode == 0 and "1 passed" in run.stdout, said[-3000:]
    assert "warning" not in said.lower(), said[-3000:]


CELL_UNDER_SHIM = textwrap.dedent("""
    import json, sys, warnings
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    magics.jobs_dir = sys.argv[1]
    ip.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ip.run_cell_magic("sbatch", "--wait", "answer = 6 * 7")
        ip.run_line_magic("hpc_jobs", "")
    print(json.dumps({"answer": ip.user_ns.get("answer"),
                      "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
""")


@pytest.mark.timeout(300)
def test_a_cell_runs_without_flock_and_says_nothing(no_flock: dict[str, str], tmp_path: Path,
                                                    slurm_cluster: Any) -> None:
    """What the issue saw: a ``%%sbatch`` cell under the shim printed filelock's
    UserWarning (and older filelock releases raise NotImplementedError there)."""
    run = subprocess.run([sys.executable, "-c", CELL_UNDER_SHIM, str(tmp_path / "jobs")],
                         env=no_flock, capture_output=True, text=True, timeout=280,
                         check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said == {"answer": 42, "warnings": []}, (said, run.stderr)
    assert "warning" not in run.stderr.lower(), run.stderr
    held = [p for p in tmp_path.rglob(f"*{HELD_SUFFIX}*")]
    assert held == [], "a lock file outlived its holder"


def test_no_filelock_release_decides_anything(no_flock: dict[str, str],
                                              tmp_path: Path) -> None:
    """The lock is ours end to end: filelock is never imported, so neither 4.x's soft
    fallback with its UserWarning nor 3.x's NotImplementedError (ENOSYS) or endless retry
    (ENOLCK) can reach a caller, whatever release is installed."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from hpc_magics.jobfolder.folder import JobFolder
        from hpc_magics.scheduler.queue import file_lock

        folder = JobFolder.create(Path(sys.argv[1]), "shim")
        folder.update_meta(state="RUNNING")
        with file_lock(Path(sys.argv[1]) / "queue.json", 5.0) as locked:
            assert locked
        print(sorted(m for m in sys.modules if m.split(".")[0] == "filelock"))
    """)
    run = subprocess.run([sys.executable, "-W", "error", "-c", script, str(tmp_path)],
                         env=no_flock, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stdout + run.stderr


# ------------------------------------------------------------------ the lock file itself
# In-process, flock is made to fail by replacing ``lock.flock`` (the real shim above shows
# the same path with real processes); the holders below are real processes.

@pytest.fixture
def soft(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(fd: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(lock_module, "flock", refused)


def _holder_file(path: Path, owner: dict[str, Any], age_s: float = 0.0) -> Path:
    held = path.with_name(path.name + HELD_SUFFIX)
    held.write_text(json.dumps(owner))
    stamp = time.time() - age_s
    os.utime(held, (stamp, stamp))
    return held


def _ended_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=60)
    return process.pid


def test_a_live_holder_keeps_its_lock(soft: None, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    first = Lock(path)
    assert first.acquire(timeout=1)
    assert not Lock(path).acquire(timeout=0.2)  # this very process holds it: not stale
    first.release()
    assert Lock(path).acquire(timeout=1)


@pytest.mark.parametrize("holder", ["ended process", "reused pid", "half-written, long ago",
                                    "other host, long ago"])
def test_a_holder_that_is_gone_loses_its_lock(soft: None, tmp_path: Path, holder: str) -> None:
    path = tmp_path / "x.lock"
    here = socket.gethostname()
    if holder == "ended process":
        held = _holder_file(path, {"host": here, "pid": _ended_pid(), "started": 1.0})
    elif holder == "reused pid":  # our pid, but a process started before ours
        held = _holder_file(path, {"host": here, "pid": os.getpid(), "started": 1.0})
    elif holder == "half-written, long ago":
        held = _holder_file(path, {}, age_s=FOREIGN_STALE_S + 60)
        held.write_text("")
        os.utime(held, (time.time() - FOREIGN_STALE_S - 60,) * 2)
    else:
        held = _holder_file(path, {"host": "elsewhere", "pid": 1, "started": 1.0},
                            age_s=FOREIGN_STALE_S + 60)
    taken = Lock(path)
    assert taken.acquire(timeout=5)
    assert json.loads(held.read_text())["pid"] == os.getpid()
    taken.release()
    assert not held.exists()


def test_another_hosts_recent_holder_keeps_its_lock(soft: None, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    _holder_file(path, {"host": "elsewhere", "pid": 1, "started": 1.0}, age_s=5)
    assert not Lock(path).acquire(timeout=0.2)
