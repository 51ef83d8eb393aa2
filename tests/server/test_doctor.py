"""``hpc-magics doctor`` and ``%hpc_doctor`` on the real test cluster, with real Jupyter
servers: every line holds where the installation works, and a broken setting makes its own
line fail with the fix named (exit status 1)."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from jobfolder.test_lock import no_flock  # noqa: F401 - a fixture
from kernel.sshd import running_sshd, sshd_program

from hpc_magics.doctor.checks import CHECKS
from hpc_magics.scheduler import commands

from .conftest import (
    RunningServer,
    StartLocal,
    execute,
    port_from_runtime,
    server_argv,
    server_info_in,
    wait_until_answering,
)

pytestmark = pytest.mark.timeout(300)

TOPICS = [topic for topic, _ in CHECKS]
VENV_BIN = Path(sys.executable).parent


def doctor(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, dict[str, Any]]:
    """``hpc-magics doctor --json ARGS``: its exit status and findings by topic."""
    done = subprocess.run([str(VENV_BIN / "hpc-magics"), "doctor", "--json", *args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=240,
                          check=False)
    assert done.stdout, done.stderr
    found = {item["topic"]: item for item in json.loads(done.stdout)["checks"]}
    assert list(found) == TOPICS, done.stderr
    return done.returncode, found


def environment(tmp_path: Path, server: RunningServer | None = None, **extra: str
                ) -> dict[str, str]:
    env = commands.scrubbed_environment()
    env.update(HPC_MAGICS_PROFILE="lab", HPC_MAGICS_JOBS_DIR=str(tmp_path / "jobs"),
               JUPYTER_PLATFORM_DIRS="0",
               JUPYTER_RUNTIME_DIR=str(server.runtime_dir if server else tmp_path / "runtime"),
               JUPYTER_CONFIG_DIR=str(server.folder / "config" if server
                                      else tmp_path / "config"))
    env.update(extra)
    return env


def statuses(found: dict[str, Any]) -> dict[str, str]:
    return {topic: item["status"] for topic, item in found.items()}


def test_every_line_holds_on_the_healthy_cluster(slurm_cluster: object, tmp_path: Path,
                                                 local_server: StartLocal) -> None:
    server = local_server()
    status, found = doctor(env=environment(tmp_path, server), cwd=tmp_path)
    lines = "\n".join(f"{t}: {f['status']} {f['line']}" for t, f in found.items())
    assert statuses(found) == dict.fromkeys(TOPICS, "ok"), lines
    assert status == 0
    assert re.match(r"slurm(-wlm)? \d+\.\d+", found["Slurm commands"]["line"])  # sbatch --version
    assert found["profile"]["line"].startswith("lab (HPC_MAGICS_PROFILE=lab)")
    assert "flock" in found["jobs folder locking"]["line"]
    assert server.url in found["Jupyter server"]["line"]
    # the test job's folder goes when everything held; the jobs folder was made private
    jobs = tmp_path / "jobs"
    assert list(jobs.iterdir()) == []
    assert stat.S_IMODE(jobs.stat().st_mode) == 0o700


def test_where_flock_fails_the_lock_line_says_lock_files(no_flock: dict[str, str],  # noqa: F811
                                                          tmp_path: Path) -> None:
    """A file system that refuses flock (an LD_PRELOAD shim, as Lustre -o noflock
    answers: tests/jobfolder/test_lock.py) locks with lock files: it holds, and says so."""
    jobs = tmp_path / "jobs"
    jobs.mkdir(mode=0o700)
    _, found = doctor("--no-job", env=environment(tmp_path, LD_PRELOAD=no_flock["LD_PRELOAD"]),
                      cwd=tmp_path)
    assert found["jobs folder locking"]["status"] == "ok"
    assert found["jobs folder locking"]["line"] == (
        f"{jobs} refuses flock (Lustre -o noflock, some NFS): hpc_magics locks with lock "
        "files there instead, as documented")
    assert list(jobs.iterdir()) == []  # its lock file and the file that held it are gone


def test_without_slurm_on_path_the_slurm_line_fails(tmp_path: Path) -> None:
    status, found = doctor("--no-job", env=environment(tmp_path, PATH=str(VENV_BIN)),
                           cwd=tmp_path)
    assert status == 1
    assert found["Slurm commands"]["status"] == "fail"
    assert "squeue, sacct, scancel, sbatch not found on PATH" in found["Slurm commands"]["line"]
    assert "module load slurm" in found["Slurm commands"]["line"]
    # no cluster here: cells run on this machine, said once, and no profile to draft from it
    lines = [item["line"] for item in found.values()]
    assert sum("cells run on this machine (the local backend)" in line for line in lines) == 1
    assert "cells run on this machine" in found["Slurm commands"]["line"]
    assert not any("--draft" in line for line in lines)
    assert found["controller"] == {"check": "controller", "topic": "controller",
                                   "status": "warn", "line": "not checked: no Slurm here"}
    assert found["jobs folder on the nodes"] == {
        "check": "jobs_folder_shared", "topic": "jobs folder on the nodes", "status": "warn",
        "line": "not checked (--no-job)"}


def test_a_jobs_folder_open_to_others_fails_the_privacy_line(slurm_cluster: object,
                                                              tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    jobs.chmod(0o777)
    status, found = doctor("--no-job", env=environment(tmp_path), cwd=tmp_path)
    assert status == 1
    privacy = found["jobs folder privacy"]
    assert privacy["status"] == "fail"
    assert privacy["line"] == (f"{jobs} has mode 0777: other users can look into your jobs: "
                               f"chmod o-rwx {jobs}")
    assert stat.S_IMODE(jobs.stat().st_mode) == 0o777  # the doctor says, it does not change
    assert statuses(found)["jobs folder"] == "ok"


def test_a_disabled_server_extension_fails_its_line(slurm_cluster: object,
                                                    tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"hpc_magics": False}}}))
    status, found = doctor("--no-job", env=environment(tmp_path), cwd=tmp_path)
    assert status == 1
    assert found["server extension"]["status"] == "fail"
    assert "`jupyter server extension enable hpc_magics`" in found["server extension"]["line"]
    assert found["Jupyter server"]["status"] == "warn"  # none runs: not checked


def test_a_server_without_the_extension_fails_the_server_line(tmp_path: Path) -> None:
    """A server running with the extension off answers 404 on its routes."""
    folder = tmp_path / "server"
    for sub in ("root", "runtime", "config"):
        (folder / sub).mkdir(parents=True)
    (folder / "config" / "jupyter_server_config.json").write_text(  # off, whatever else says
        json.dumps({"ServerApp": {"jpserver_extensions": {"hpc_magics": False}}}))
    env = environment(tmp_path, JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
                      JUPYTER_CONFIG_DIR=str(folder / "config"), JUPYTER_TOKEN="doctor-test")
    with open(folder / "server.log", "wb") as log:
        process = subprocess.Popen(server_argv(folder, []), stdout=log,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        port = port_from_runtime(server_info_in(folder / "runtime"), lambda: process.poll() is None,
                                 lambda: (folder / "server.log").read_text(errors="replace"))
        server = RunningServer(f"http://127.0.0.1:{port}/", "doctor-test", folder, process)
        wait_until_answering(server, lambda: process.poll() is None)
        status, found = doctor("--no-job", env=env, cwd=tmp_path)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert status == 1
    line = found["Jupyter server"]["line"]
    assert found["Jupyter server"]["status"] == "fail"
    assert f"the Jupyter server at {server.url} did not answer GET hpc-magics/server" in line
    assert "enable it" in line and "restart the server" in line
    assert found["server extension"]["status"] == "fail"


def test_hpc_doctor_in_a_real_kernel_prints_the_same_lines(
        slurm_cluster: object, tmp_path: Path, local_server: StartLocal,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPC_MAGICS_PROFILE", "lab")  # the server's and so its kernel's
    monkeypatch.setenv("HPC_MAGICS_JOBS_DIR", str(tmp_path / "jobs"))
    (tmp_path / "jobs").mkdir(mode=0o700)  # both runs find it: their lines are the same
    server = local_server()
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    output = execute(server, kernel["id"], "%load_ext hpc_magics\n%hpc_doctor", timeout=240)
    printed = [line for line in output.splitlines() if line[:6].strip() in {"ok", "warn", "fail"}]
    assert [line.split(":", 1)[0][6:] for line in printed] == TOPICS, output
    assert all(line.startswith("ok    ") for line in printed), output
    assert f"the Jupyter server at {server.url} (it runs this kernel) answers" in output
    _, found = doctor(env=environment(tmp_path, server), cwd=tmp_path)
    cli = [f"{item['status']:<4}  {topic}: {item['line']}" for topic, item in found.items()]
    # the same checks and lines, but for the test job's id and the server line's "this kernel"
    assert [line.split(":", 1)[0] for line in cli] == [line.split(":", 1)[0] for line in printed]
    same = {"Slurm commands", "controller", "profile", "jobs folder", "jobs folder privacy",
            "jobs folder locking", "server extension"}
    assert {line for line in cli if line[6:].split(":")[0] in same} == \
        {line for line in printed if line[6:].split(":")[0] in same}


@pytest.mark.skipif(sshd_program() is None or shutil.which("ssh") is None,
                    reason="no sshd or ssh on this host: apt-get install openssh-server "
                           "(scripts/run-tests does, as root)")
def test_kernel_ports_through_ssh_try_ssh_to_the_node(slurm_cluster: object,
                                                     tmp_path: Path) -> None:
    """A profile whose Slurm kernels go through an SSH tunnel: the line is `ssh NODE` from
    here, to the node the test job ran on (an sshd of the test user stands in for the
    nodes', as in tests/kernel/test_tunnel.py)."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    folder = Path(tempfile.mkdtemp(prefix="hm-sshd-"))  # short: sshd's paths stay short
    try:
        with running_sshd(folder / "sshd", ("c1", "c2")) as sshd:
            for name, config in (("lab-ssh", sshd.ssh_config), ("lab-nokey", tmp_path / "x")):
                (profiles / f"{name}.toml").write_text(
                    f'extends = "lab"\n\n[kernel]\ntunnel = "ssh"\n'
                    f'ssh_options = ["-F", "{config}"]\n')
            (tmp_path / "x").write_text("Host c1 c2\n  HostName 127.0.0.1\n  Port 9\n")
            env = environment(tmp_path, HPC_MAGICS_PROFILE_PATH=str(profiles))
            status, found = doctor("--profile", "lab-ssh", env=env, cwd=tmp_path)
            refused, refused_found = doctor("--profile", "lab-nokey", env=env, cwd=tmp_path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    node = found["jobs folder on the nodes"]["line"].split(" on node ")[1].split()[0]
    assert found["kernel ports"]["status"] == "ok"
    assert found["kernel ports"]["line"] == (f"tunnel ssh: `ssh {node}` works from this host, "
                                             "with no password")
    assert status == 0
    line = refused_found["kernel ports"]["line"]
    assert refused_found["kernel ports"]["status"] == "fail" and refused == 1
    assert "fails from this host (" in line and "give it a key for the nodes" in line
