"""%%sbatch cells on a --release cluster's login host, where the compute nodes are other
hosts: own hostname, own /tmp and node-local scratch; only /home is shared.

These run on the login host (``scripts/slurm-cluster --release R exec``, which sets
HPC_MAGICS_RELEASE), with pytest's --basetemp in the user's home (the job folders must be on
the shared file system); tests/sites/test_release_clusters.py runs them on every release
that is up. On the default test cluster (one host, one /tmp) they are skipped.
"""

from __future__ import annotations

import os
import pwd
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(not os.environ.get("HPC_MAGICS_RELEASE"),
                       reason="needs a --release cluster's login host (login and nodes apart): "
                              "tests/sites/test_release_clusters.py runs it there through "
                              "scripts/slurm-cluster --release R exec"),
]


@pytest.fixture
def site_shell(shell: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("HPC_MAGICS_NODES_SHARE_TMP", raising=False)  # hosts apart here
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 3")
    return shell


@pytest.fixture
def login_tmp() -> Iterator[Path]:
    """A folder in the login host's own /tmp (no compute node sees it)."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="hpcm-login-") as folder:
        yield Path(folder)


def test_cell_reading_a_login_tmp_file_is_refused_in_one_line(
        site_shell: Any, login_tmp: Path, tmp_path: Path, job_folders: Any) -> None:
    written = login_tmp / "numbers.txt"
    written.write_text("1 2 3")
    with pytest.raises(UsageError) as refused:
        site_shell.run_cell_magic("sbatch", "--wait", f"total = sum(map(int, open('{written}')"
                                                      ".read().split()))\n")
    said = str(refused.value)
    assert "\n" not in said and str(written) in said and "home or project folder" in said
    assert job_folders(site_shell) == []  # nothing submitted
    # the fix it names works: a copy in the shared home is read on the node
    shared = tmp_path / "numbers.txt"
    shared.write_text(written.read_text())
    site_shell.run_cell_magic("sbatch", "--wait", f"total = sum(map(int, open('{shared}')"
                                                  ".read().split()))\n")
    assert site_shell.user_ns["total"] == 6


def test_job_folder_or_staging_under_login_tmp_is_refused(
        site_shell: Any, login_tmp: Path, tmp_path: Path, job_folders: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = login_tmp / "data"
    data.mkdir()
    for flags, named in [(f"--stage {data}", str(data)),
                         (f"--stage-back {login_tmp / 'back'}", str(login_tmp / "back"))]:
        with pytest.raises(UsageError, match="compute nodes do not see") as refused:
            site_shell.run_cell_magic("sbatch", flags, "x = 1\n")
        assert named in str(refused.value) and "\n" not in str(refused.value)
    assert job_folders(site_shell) == []
    magics = site_shell.magics_manager.registry["HpcMagicsKernel"]
    monkeypatch.setattr(magics, "jobs_dir", str(login_tmp / "jobs"))
    with pytest.raises(UsageError, match=r"the job folder .* HPC_MAGICS_JOBS_DIR"):
        site_shell.run_cell_magic("sbatch", "", "x = 1\n")
    monkeypatch.setattr(magics, "jobs_dir", str(tmp_path / "jobs"))
    monkeypatch.chdir(login_tmp)
    with pytest.raises(UsageError, match=f"the working directory {login_tmp} is under /tmp"):
        site_shell.run_cell_magic("sbatch", "", "x = 1\n")
    assert not (login_tmp / "jobs").exists() and not (tmp_path / "jobs").exists()


def test_ranks_run_on_other_hosts(site_shell: Any) -> None:
    site_shell.run_cell_magic("sbatch", "--wait -N 2 --ntasks-per-node 1 --gather host",
                              "import socket\nhost = (rank, socket.gethostname())\n")
    hosts = dict(site_shell.user_ns["host"])
    assert sorted(hosts.values()) == ["c1", "c2"], hosts
    assert socket.gethostname() not in hosts.values()


def test_staging_lands_in_each_nodes_slurm_tmpdir_and_rank0_comes_back(
        site_shell: Any, tmp_path: Path) -> None:
    """The release's nodes set $SLURM_TMPDIR as the Alliance does (scripts/lib/
    release-node.sh): /localscratch/USER.JOBID.0 on each node, the node's own, made for the
    job and removed at its end. Staging lands there on every node; rank 0's stage_out
    comes back."""
    data = tmp_path / "inputs"
    data.mkdir()
    (data / "a.txt").write_text("alpha")
    back = tmp_path / "back"
    site_shell.run_cell_magic(
        "sbatch", f"--wait -N 2 --ntasks-per-node 1 --gather found --stage {data} "
                  f"--stage-back {back}",
        "import os, pathlib, socket\n"
        "here = pathlib.Path(stage_dir)\n"
        "job = os.environ['SLURM_JOB_ID']\n"
        "# this job's folders in this node's scratch: its own only\n"
        "mine = sorted(p.name for p in here.parent.iterdir() if f'.{job}.' in p.name)\n"
        "found = (socket.gethostname(), os.environ.get('SLURM_TMPDIR'), str(here), mine,\n"
        "         pathlib.Path(staged['inputs'], 'a.txt').read_text(), job)\n"
        "pathlib.Path(stage_out, f'from-rank{rank}.txt').write_text(socket.gethostname())\n")
    found = site_shell.user_ns["found"]
    assert sorted(f[0] for f in found) == ["c1", "c2"]
    user = pwd.getpwuid(os.getuid()).pw_name
    for host, tmpdir, local, mine, text, job in found:
        assert tmpdir == f"/localscratch/{user}.{job}.0", (host, tmpdir)
        assert local == tmpdir and text == "alpha"
        assert mine == [Path(local).name], (host, mine)  # the other node's is not here
        assert not Path(local).exists()  # not on the login host
    assert sorted(p.name for p in back.iterdir()) == ["from-rank0.txt"]
    assert (back / "from-rank0.txt").read_text() == found[0][0]
    # the job's end removed each node's folder (the Epilog): a later job on both nodes
    # finds none of it
    site_shell.run_cell_magic(
        "sbatch", "--wait -N 2 --ntasks-per-node 1 --gather left",
        "import os, socket\n"
        f"left = (socket.gethostname(), os.path.exists({found[0][2]!r}), "
        f"os.path.exists({found[1][2]!r}))\n")
    assert sorted(site_shell.user_ns["left"]) == [("c1", False, False), ("c2", False, False)]


@pytest.mark.parametrize("cpus", [1, 2])
def test_a_job_sees_only_the_cpus_it_asked_for(site_shell: Any, cpus: int) -> None:
    """ConstrainCores: the job's cpuset holds as many CPUs as it asked for (the nodes
    claim 4 CPUs on this 2-core machine; Slurm maps the ones the machine lacks onto the
    ones it has, so a 1-CPU job still gets exactly one)."""
    site_shell.run_cell_magic("sbatch", f"--wait -c {cpus}",
                              "import os\nseen = sorted(os.sched_getaffinity(0))\n")
    assert len(site_shell.user_ns["seen"]) == cpus, site_shell.user_ns["seen"]
