"""Real users on the real cluster: private job folders, shared project folders, own jobs only.

These run as an ordinary user (scripts/run-tests runs the suite as hpcuser1) and act as
the second user, hpcuser2, through the sudo rule scripts/run-tests installs. Run as root
they skip: root may read and cancel anything.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from IPython.core.error import UsageError

import hpc_magics
from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.jobfolder.folder import JobFolder

if TYPE_CHECKING:  # fixture types only; test modules do not import conftest at run time
    from conftest import OtherUser, SacctState

pytestmark = pytest.mark.timeout(300)

# What the second user runs: a kernel-like IPython shell that submits one %%sbatch cell
# into JOBS_DIR and prints the job's id, folder and (after --wait) the fetched `answer`.
SUBMIT_AS_OTHER_USER = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
jobs_dir, flags, cell = sys.argv[1:4]
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "hpc_magics")
magics = ip.magics_manager.registry["HpcMagicsKernel"]
magics.jobs_dir = jobs_dir
ip.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
ip.run_cell_magic("sbatch", flags, cell)
handle = magics.handles[magics.last_job]
print(json.dumps({"job_id": handle.job_id, "folder": str(handle.folder.path),
                  "answer": ip.user_ns.get("answer")}))
"""

WHO_AM_I = "import os, pwd\nanswer = pwd.getpwuid(os.getuid()).pw_name + ' on the node'"


@pytest.fixture
def user_shell(shell: Any, slurm_cluster: Any, unprivileged_user: str) -> Any:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    return shell


@pytest.fixture
def project(second_user: OtherUser) -> Iterator[Path]:
    """A project folder both users share: group hpcproj, setgid, mode 2770, outside /tmp's
    private per-user pytest folders."""
    folder = Path(tempfile.mkdtemp(prefix="hpc-magics-project-"))
    os.chown(folder, -1, _gid("hpcproj"))
    folder.chmod(0o2770)
    yield folder
    # the other user's job folders are theirs to delete (sticky jobs root, 0700 folders)
    second_user.run("find", str(folder), "-depth", "-user", second_user.name, "-delete",
                    check=False)
    shutil.rmtree(folder, ignore_errors=True)


def _gid(group: str) -> int:
    import grp

    return grp.getgrnam(group).gr_gid


def submit_as(user: OtherUser, jobs_dir: Path, flags: str, cell: str) -> dict[str, Any]:
    package_parent = str(Path(hpc_magics.__file__).resolve().parent.parent)
    shares_tmp = os.environ.get("HPC_MAGICS_NODES_SHARE_TMP", "")  # tests/conftest.py's
    done = user.run("env", f"PYTHONPATH={package_parent}",
                    f"HPC_MAGICS_NODES_SHARE_TMP={shares_tmp}",
                    f"PATH={Path(sys.executable).parent}:/usr/bin:/bin", sys.executable,
                    "-c", SUBMIT_AS_OTHER_USER, str(jobs_dir), flags, cell,
                    timeout=240, cwd=jobs_dir.parent)
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def magics_of(shell: Any) -> Any:
    return shell.magics_manager.registry["HpcMagicsKernel"]


def owner_and_mode(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, stat.S_IMODE(info.st_mode)


def test_sbatch_cell_runs_as_the_user_in_a_private_folder(
        user_shell: Any, unprivileged_user: str, sacct_state: SacctState) -> None:
    user_shell.run_cell_magic("sbatch", "--wait", WHO_AM_I)
    assert user_shell.user_ns["answer"] == f"{unprivileged_user} on the node"
    handle = magics_of(user_shell).handles[magics_of(user_shell).last_job]
    assert owner_and_mode(handle.folder.path) == (os.getuid(), 0o700)
    assert owner_and_mode(magics_of(user_shell).jobs_root) == (os.getuid(), 0o700)
    assert handle.folder.results_path.stat().st_uid == os.getuid()
    assert sacct_state(handle.job_id, until={"COMPLETED"}) == "COMPLETED"


def test_results_another_user_wrote_are_refused(user_shell: Any, second_user: OtherUser,
                                                project: Path) -> None:
    magics_of(user_shell).jobs_dir = str(project / "hpc_jobs")  # a folder they can reach
    user_shell.run_cell_magic("sbatch", "--wait", WHO_AM_I)
    handle = magics_of(user_shell).handles[magics_of(user_shell).last_job]
    folder = handle.folder.path
    # Our folder opened to the group for a moment: the other user swaps in a result file
    # whose unpickling would run their code (it would create `ran`).
    ran = project / "ran"
    os.chown(folder, -1, _gid("hpcproj"))
    folder.chmod(0o770)
    handle.folder.results_path.unlink()
    payload = pickle.dumps(Evil(f"touch {ran}"))
    second_user.run("python3", "-c", "import sys; open(sys.argv[1], 'wb').write("
                    "bytes.fromhex(sys.argv[2]))", str(handle.folder.results_path),
                    payload.hex())
    with pytest.raises(UsageError) as group_writable:
        user_shell.run_line_magic("hpc_fetch", handle.job_id)
    assert str(group_writable.value) == (f"{folder} is writable by others: refusing to load "
                                         f"it (chmod go-w {folder} if you trust it)")
    folder.chmod(0o700)
    with pytest.raises(UsageError) as foreign:
        user_shell.run_line_magic("hpc_fetch", handle.job_id)
    message = str(foreign.value)
    assert "\n" not in message
    assert message == (f"{handle.folder.results_path} belongs to {second_user.name}, not "
                       f"{_me()}: refusing to load it (unpickling "
                       "runs its code)")
    assert not ran.exists()


class Evil:
    """Unpickling it runs a shell command: what a foreign result file could do."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (self.command,)


def _me() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def test_two_users_share_a_project_folder(user_shell: Any, second_user: OtherUser,
                                          project: Path, unprivileged_user: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    jobs = project / "hpc_jobs"
    magics_of(user_shell).jobs_dir = str(jobs)
    user_shell.run_cell_magic("sbatch", "--wait --name mine", WHO_AM_I)
    mine = magics_of(user_shell).handles[magics_of(user_shell).last_job]
    # the jobs root is the project group's: setgid keeps the group, sticky guards folders
    info = jobs.stat()
    assert info.st_gid == _gid("hpcproj")
    assert stat.S_IMODE(info.st_mode) == 0o3770

    theirs = submit_as(second_user, jobs, "--wait --name theirs", WHO_AM_I)
    assert theirs["answer"] == f"{second_user.name} on the node"
    assert user_shell.user_ns["answer"] == f"{unprivileged_user} on the node"

    their_folder = Path(theirs["folder"])
    assert their_folder.parent == jobs and mine.folder.path.parent == jobs
    assert stat.S_IMODE(their_folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(mine.folder.path.stat().st_mode) == 0o700
    with pytest.raises(PermissionError):
        list(their_folder.iterdir())
    peek = second_user.run("ls", str(mine.folder.path), check=False)
    assert peek.returncode != 0 and "Permission denied" in peek.stderr

    # %hpc_jobs lists only our job; their folder is never attached to
    capsys.readouterr()
    user_shell.run_line_magic("hpc_jobs", "")
    listing = capsys.readouterr().out
    assert mine.job_id in listing and theirs["job_id"] not in listing
    with pytest.raises(UsageError, match=f"no job '{theirs['job_id']}' under"):
        user_shell.run_line_magic("hpc_fetch", theirs["job_id"])

    # a later session of ours fetches our own result again from the shared folder
    magics_of(user_shell).handles.clear()
    user_shell.user_ns.pop("answer")
    user_shell.run_line_magic("hpc_fetch", mine.job_id)
    assert user_shell.user_ns["answer"] == f"{unprivileged_user} on the node"


def test_cannot_cancel_another_users_job(user_shell: Any, second_user: OtherUser,
                                         project: Path, sacct_state: SacctState) -> None:
    jobs = project / "hpc_jobs"
    magics_of(user_shell).jobs_dir = str(jobs)
    theirs = submit_as(second_user, jobs, "--name theirs", "import time\ntime.sleep(300)")
    job_id = theirs["job_id"]
    try:
        sacct_state(job_id, until={"RUNNING", "PENDING"}, timeout=30)
        # by id: their folder is not ours, and squeue -u lists no such job of ours
        with pytest.raises(UsageError, match=f"job {job_id} is not one of hpcuser1's jobs"):
            user_shell.run_line_magic("hpc_cancel", job_id)
        # a folder of ours that claims their job id: Slurm itself refuses the scancel
        fake = JobFolder.create(jobs, "claims-their-job")
        fake.write_meta({"job_id": job_id, "backend": "slurm", "name": "claims-their-job"})
        with pytest.raises(UsageError, match=f"scancel {job_id} failed: .*[Pp]ermission denied"):
            user_shell.run_line_magic("hpc_cancel", job_id)
        magics_of(user_shell).handles.clear()
        with pytest.raises((UsageError, HpcMagicsError), match=r"[Pp]ermission denied"):
            hpc_magics.job(job_id).cancel()
        assert sacct_state(job_id) in {"RUNNING", "PENDING"}
    finally:
        second_user.run("scancel", job_id, check=False)


def test_a_jobs_folder_another_user_keeps_private_is_a_clear_error(
        user_shell: Any, second_user: OtherUser, project: Path) -> None:
    jobs = project / "their_jobs"
    second_user.run("mkdir", "-m", "700", str(jobs))
    magics_of(user_shell).jobs_dir = str(jobs)
    # HpcMagicsError: %%sbatch does not turn this one into a UsageError yet (magics/jobs.py)
    with pytest.raises((UsageError, HpcMagicsError)) as raised:
        user_shell.run_cell_magic("sbatch", "", WHO_AM_I)
    assert str(raised.value) == (
        f"jobs folder {jobs} belongs to {second_user.name} and you may not create job "
        f"folders in it: ask them to `chmod 3770 {jobs}` (group hpcproj), or set "
        "HPC_MAGICS_JOBS_DIR to a folder of yours")
    assert magics_of(user_shell).last_job is None  # nothing was submitted
