"""The README's main command: scripts/run-lab starts JupyterLab as a Slurm job."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from server.conftest import RunningServer, execute, port_to_hand_on, processes_mentioning

REPO_ROOT = Path(__file__).resolve().parent.parent


def a_cell_from_tmp(server: RunningServer) -> str:
    """A notebook of a clone under /tmp: its kernel works there and its jobs' folders are
    there. The test cluster's nodes are this host's, so the cell must run, not be refused
    as on a site whose nodes have their own /tmp (run-lab says so for this cluster)."""
    kernel = server.post("api/kernels", json={"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    return execute(server, kernel.json()["id"], (
        "import os, tempfile\nos.chdir(tempfile.mkdtemp(prefix='hpcm-clone-', dir='/tmp'))\n"
        "%load_ext hpc_magics\n%hpc_resources -p debug -t 5 --mem 1G\n"), timeout=60) + \
        execute(server, kernel.json()["id"], "%%sbatch --wait\nanswer = 6 * 7\n",
                timeout=180) + \
        execute(server, kernel.json()["id"], "print(f'answer={answer}')", timeout=30)


@pytest.mark.timeout(600)
def test_run_lab_serves_jupyterlab_from_a_slurm_job(slurm_cluster: Any, sacct_state: Any,
                                                     tmp_path: Path) -> None:
    port, token = port_to_hand_on(), secrets.token_hex(8)
    # nor tests/conftest.py's word that the nodes share /tmp: run-lab must say it itself
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))
           and k != "HPC_MAGICS_NODES_SHARE_TMP"}
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
        server = RunningServer(f"http://127.0.0.1:{port}/", token, tmp_path)
        said = a_cell_from_tmp(server)
        assert "answer=42" in said, f"a %%sbatch cell from a folder under /tmp:\n{said}"
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
