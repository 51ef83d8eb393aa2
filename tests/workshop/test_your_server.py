"""notebooks/your-server.ipynb, run twice: with its kernel inside a real Slurm job (as on an
HPC JupyterHub, where the server and its kernels run in the server's job), and outside one.

Inside: the test submits a `sleep` job shaped like a hub's server job (partition `long`,
8 hours, one node) and starts the notebook's kernel as a step of it (`srun --jobid --overlap`),
so the kernel has the SLURM_* environment Slurm gives it, and time left and node-hours are
Slurm's real numbers. The notebook must leave that job running: it only cancels its own.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import Executed, execute

NAME = "your-server.ipynb"
SERVER_LIMIT_H = 8
START_TIMEOUT_S = 180  # other engineers' jobs may hold the cluster's CPUs for a while


def squeue_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip() if answer.ok else ""


@pytest.fixture
def server_job(slurm_cluster: Any, tmp_path: Path) -> Iterator[str]:
    """A running job like a hub's server job; cancelled afterwards (it also ends by itself)."""
    answer = commands.run(
        ["sbatch", "--parsable", "-p", "long", "-t", f"{SERVER_LIMIT_H}:00:00", "-N", "1",
         "-c", "1", "--mem", "300M", "-J", "jupyter-server", "-o", "/dev/null",
         f"--chdir={tmp_path}", "--wrap", "sleep 900"], timeout=30)
    assert answer.ok, answer.first_error_line()
    job_id = answer.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while (state := squeue_state(job_id)) != "RUNNING":
            if time.monotonic() > deadline:
                pytest.fail(f"the server-like job {job_id} did not start within "
                            f"{START_TIMEOUT_S} s (state {state or 'gone'}): cluster too busy",
                            pytrace=False)
            time.sleep(1)
        yield job_id
    finally:
        commands.run(["scancel", job_id], timeout=30)


def kernel_in_job(folder: Path, job_id: str) -> Path:
    """A `python3` kernelspec that starts the kernel as a step of `job_id`, in a folder to put
    first on JUPYTER_PATH (it then hides the usual python3 kernel)."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = ["srun", "--jobid", job_id, "--overlap", "--nodes=1", "--ntasks=1", "--quiet",
            "--job-name", "jupyter-server",
            sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3 (in a Slurm job)", "language": "python"}))
    return folder


def minutes_left(text: str) -> int:
    """`7h59m left` (as `%hpc_server` says it) in minutes."""
    match = re.search(r"(\d+)h(\d+)m left", text)
    assert match, text
    return int(match[1]) * 60 + int(match[2])


def assert_only_own_job_cancelled(run: Executed, sacct_state: Any) -> None:
    jobs = [folder for folder in (run.folder / "hpc_jobs").iterdir() if folder.is_dir()]
    assert len(jobs) == 1
    meta = json.loads((jobs[0] / "meta.json").read_text())
    assert meta["name"] == "keeps-running"
    assert "keeps-running" in run.output_of("%hpc_jobs")
    said = run.output_of("%hpc_cancel")  # the end itself, or Slurm's state one look after
    assert "CANCELLED" in said or "cancel sent; Slurm shows" in said, said
    assert sacct_state(meta["job_id"], until={"CANCELLED"}, timeout=30) == "CANCELLED"


def assert_teaching_parts(run: Executed) -> None:
    """What the notebook shows the same way inside and outside a job."""
    alvis = run.output_of("%hpc_resources --profile alvis")
    assert "#SBATCH --gpus-per-node=A40:1" in alvis and "GPU-h" in alvis
    settings = run.output_of("from hpc_magics.server.extension")
    assert "c.HpcMagicsServer.idle_stop_minutes = 0.0" in settings
    assert "c.HpcMagicsServer.warn_minutes = [15, 5]" in settings
    idle = run.output_of("import time")
    assert "the kernel is idle: the server stops in 20 minutes" in idle
    assert "a cell is still running: the server stops in 60 minutes" in idle
    assert run.widgets() >= 1  # %hpc_server's widget


@pytest.mark.timeout(600)
def test_in_a_slurm_job_it_shows_the_jobs_real_time_and_cost(
        student_folder: Path, server_job: str, tmp_path: Path, sacct_state: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_in_job(tmp_path / "jupyter", server_job)))
    run = execute(NAME, student_folder)

    assert f"This kernel runs in Slurm job {server_job}, partition long" in run.everything
    server = run.output_of("%load_ext hpc_magics")
    assert f"job {server_job} · " in server and "Partition: long, 1 node" in server
    assert "Node-hours: 0.0 used of 8.0" in server
    assert SERVER_LIMIT_H * 60 - 10 <= minutes_left(server) < SERVER_LIMIT_H * 60

    squeue = run.output_of("if job_id:\n    !squeue")
    row = next(line.split() for line in squeue.splitlines() if server_job in line)
    assert row[1:3] == ["long", "jupyter-server"] and row[-1] == "1"
    assert row[-2].startswith("7:5")  # time left (%L) of an 8-hour job that just started

    fields = run.output_of("import subprocess")
    assert re.search(r"TimeLimit\s+08:00:00", fields) and re.search(r"NumNodes\s+1\b", fields)
    cost = run.output_of("def hours")
    assert "if it runs its limit: 1 node x 8.00 h = 8.00 node-h" in cost
    used = float(re.search(r"used so far: +1 node x ([\d.]+) h", cost)[1])  # type: ignore[index]
    assert 0 <= used < 0.1 and re.search(r"time left: +(7\.9\d|8\.00) h", cost)
    end = commands.run(["squeue", "-h", "-j", server_job, "-o", "%e"], timeout=30).stdout
    assert f"until {end.strip()}" in cost  # the end Slurm has set for the job
    tab = run.output_of('if job_id and fields.get("TimeLimit")')
    assert f"would leave job {server_job} holding 1 node(s) for" in tab

    assert_teaching_parts(run)
    assert_only_own_job_cancelled(run, sacct_state)
    assert squeue_state(server_job) == "RUNNING"  # the notebook never stops its server


@pytest.mark.timeout(600)
def test_outside_a_slurm_job_it_says_so(student_folder: Path, slurm_cluster: Any,
                                        sacct_state: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(name, raising=False)
    run = execute(NAME, student_folder)

    assert "This kernel is not running in a Slurm job" in run.everything
    assert "This Jupyter server is not running in a Slurm job" in \
        run.output_of("%load_ext hpc_magics")
    assert "Not in a Slurm job" in run.output_of("if job_id:\n    !squeue")
    assert "Slurm bills nothing for this server" in run.output_of("def hours")
    assert "closing the tab leaves this server running" in \
        run.output_of('if job_id and fields.get("TimeLimit")')
    assert_teaching_parts(run)
    assert_only_own_job_cancelled(run, sacct_state)
