"""The README's main command: scripts/run-lab starts JupyterLab as a Slurm job."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from server.conftest import processes_mentioning

REPO_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.timeout(600)
def test_run_lab_serves_jupyterlab_from_a_slurm_job(slurm_cluster: Any,
                                                     sacct_state: Any) -> None:
    port, token = free_port(), secrets.token_hex(8)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
    env.update(HPC_MAGICS_LAB_PORT=str(port), HPC_MAGICS_LAB_TOKEN=token,
               HPC_MAGICS_LAB_TIME="30:00")
    process = subprocess.Popen(["bash", str(REPO_ROOT / "scripts" / "run-lab")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    job_id = None
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 500
        for line in process.stdout:
            match = re.search(r"JupyterLab runs as Slurm job (\d+): (\S+)", line)
            if match:
                job_id = match.group(1)
                assert match.group(2) == f"http://127.0.0.1:{port}/lab?token={token}"
                break
            assert time.monotonic() < deadline, "run-lab did not start JupyterLab in time"
        assert job_id, "run-lab ended without starting JupyterLab"
        request = urllib.request.Request(f"http://127.0.0.1:{port}/hpc-magics/server",
                                         headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            info = json.load(answer)
        assert info["in_slurm_job"] is True and info["job_id"] == job_id
        assert info["partition"] == "long" and 0 < info["seconds_left"] <= 30 * 60
        # the token is not on any command line (/proc/PID/cmdline: every user of the node)
        assert processes_mentioning(f"--port={port}"), "no JupyterLab process to look at"
        assert processes_mentioning(token) == []
        os.killpg(process.pid, signal.SIGTERM)  # what Ctrl-C in its terminal does
        process.wait(timeout=60)
        assert sacct_state(job_id, until={"CANCELLED"}, timeout=30) == "CANCELLED"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        if job_id:
            subprocess.run(["scancel", job_id], timeout=30, check=False)
