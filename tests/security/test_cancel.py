"""Another user's job and server cannot be cancelled or stopped through any route or magic.

As an ordinary user (scripts/run-tests runs the suite as hpcuser1; root may cancel
anything, so this skips as root), beside the other user's sleeping job and their own
jupyter server running in a Slurm job: every way hpc_magics offers to cancel or stop is
tried on them, and Slurm still says both run.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
import requests
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from server.conftest import (
    HTTP_TIMEOUT_S,
    SERVER_CONFIG,
    StartLocal,
    port_from_runtime,
    server_port_option,
    wait_until_answering,
)
from server.conftest import RunningServer as Server

import hpc_magics
from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import commands

from .conftest import Intruder

pytestmark = [pytest.mark.timeout(240), pytest.mark.slurm]

JUPYTER = Path(sys.executable).parent / "jupyter"


def _sacct(job_id: str) -> str:
    answer = commands.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job_id], timeout=30)
    return answer.stdout.strip().split()[0] if answer.ok and answer.stdout.strip() else ""


def _their_jobs(intruder: Intruder, folder: Path) -> tuple[str, Server]:
    """Their sleeper job, and their jupyter server (hpc_magics enabled) in a Slurm job."""
    sleeper = intruder.run("sbatch", "--parsable", "-t", "5", "--chdir=/tmp", "-o", "/dev/null",
                           "-J", "security-theirs", "--wrap", "sleep 300").stdout.strip()
    intruder.run("mkdir", "-p", str(folder / "config" / "jupyter_server_config.d"),
                 str(folder / "runtime"))
    intruder.run("cp", str(SERVER_CONFIG), str(folder / "config" / "jupyter_server_config.d"))
    token = "their-" + str(time.time_ns())
    package_parent = str(Path(hpc_magics.__file__).resolve().parent.parent)
    python_path = ":".join(p for p in [package_parent, *os.environ.get("PYTHONPATH", "")
                                       .split(":")] if p)
    command = " ".join(shlex.quote(part) for part in [
        "env", f"PYTHONPATH={python_path}", f"JUPYTER_RUNTIME_DIR={folder / 'runtime'}",
        f"JUPYTER_CONFIG_DIR={folder / 'config'}", "JUPYTER_PLATFORM_DIRS=0",
        f"JUPYTER_TOKEN={token}",  # never on the server's command line
        str(JUPYTER), "server", "--no-browser", "--ip=127.0.0.1", server_port_option(),
        f"--ServerApp.root_dir={folder}"])
    job = intruder.run("sbatch", "--parsable", "-t", "5", f"--chdir={folder}",
                       "-o", str(folder / "server.log"), "-J", "security-their-server",
                       "--wrap", f"exec {command}").stdout.strip()
    port = port_from_runtime(  # their runtime folder: they read it
        lambda: intruder.run("find", str(folder / "runtime"), "-name", "jpserver-*.json",
                             "-exec", "cat", "{}", "+", check=False).stdout,
        lambda: _sacct(job) in {"PENDING", "RUNNING", ""}, lambda: f"their server, job {job}")
    server = Server(f"http://127.0.0.1:{port}/", token, folder, job_id=job)
    wait_until_answering(server, lambda: _sacct(job) in {"PENDING", "RUNNING", ""})
    return sleeper, server


def test_nothing_of_ours_cancels_their_job_or_stops_their_server(
        local_server: StartLocal, unprivileged_user: str, intruder: Intruder,
        shared_folder: Path, tmp_path: Path) -> None:
    folder = shared_folder / "theirs"
    intruder.run("mkdir", "-m", "755", str(folder))
    sleeper, theirs = _their_jobs(intruder, folder)
    try:
        mine = local_server()
        for job in (sleeper, theirs.job):
            # our server's cancel route: not one of our jobs
            refused = mine.post(f"hpc-magics/jobs/{job}/cancel")
            assert refused.status_code == 404, refused.text
        # their server's routes, with our token and without one
        for path in ("hpc-magics/server/stop", f"hpc-magics/jobs/{sleeper}/cancel"):
            for headers in (mine.headers(), {}):
                answer = requests.post(theirs.url + path, headers=headers,
                                       timeout=HTTP_TIMEOUT_S)
                assert answer.status_code == 403, f"{path}: {answer.status_code}"

        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "hpc_magics")
        magics = ip.magics_manager.registry["HpcMagicsKernel"]
        magics.jobs_dir, magics.request = str(tmp_path / "jobs"), ResourceRequest(profile="lab")
        magics.handles.clear()
        for job in (sleeper, theirs.job):
            with pytest.raises(UsageError, match=f"job {job} is not one of .*'s jobs"):
                ip.run_line_magic("hpc_cancel", job)
            with pytest.raises(UsageError, match=f"no job '{job}'"):
                hpc_magics.job(job)
            # a folder of ours that claims their job: Slurm itself refuses the scancel
            claim = JobFolder.create(magics.jobs_root, f"claims-{job}")
            claim.write_meta({"job_id": job, "backend": "slurm", "name": f"claims-{job}"})
            magics.handles.clear()
            with pytest.raises((UsageError, HpcMagicsError), match=r"[Pp]ermission denied|"
                               r"not one of"):
                hpc_magics.job(job).cancel()
        # the command line has no way to cancel at all
        from hpc_magics.cli import SUBCOMMANDS

        assert not {"cancel", "stop", "scancel"} & set(SUBCOMMANDS)

        # our own server's stop stops ours alone
        stopped = mine.post("hpc-magics/server/stop", data=json.dumps({"job_id": theirs.job}))
        assert stopped.status_code == 200
        assert stopped.json()["job_id"] is None  # ours runs in no job: nothing to cancel
        time.sleep(2)
        assert _sacct(sleeper) in {"RUNNING", "PENDING"}
        assert _sacct(theirs.job) in {"RUNNING", "PENDING"}
        assert theirs.answers(), "their server stopped"
    finally:
        intruder.run("scancel", sleeper, theirs.job or "", check=False)
