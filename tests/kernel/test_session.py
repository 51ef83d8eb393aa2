"""``%hpc_session`` and ``%%sbatch --session`` in a real IPython shell, on the test cluster:
one job keeps the session's variables between cells; assigned names come back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.kernel import session as sessions

from .conftest import jobs_named_once_accounted, squeue_ids

pytestmark = pytest.mark.slurm  # each test well under 30 s: not `slow`


def test_a_session_keeps_its_state_between_cells_in_one_job(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    name = f"s{os.getpid()}"
    since = time.time()
    shell.run_line_magic("hpc_session", f"start {name} -t 5")
    session = sessions.get(name)
    job_id = session.job_id
    assert squeue_ids(job_id) == [job_id]
    assert "runs the kernel" in capsys.readouterr().out

    shell.user_ns["base"] = 40
    shell.run_cell_magic("sbatch", f"--session {name}",
                         "import os\nx = base + 1\njob = os.environ['SLURM_JOB_ID']\n"
                         "kept = [1, 2, 3]\nprint('on the node', job)")
    assert shell.user_ns["x"] == 41
    assert shell.user_ns["job"] == job_id  # it ran in the session's job
    assert f"on the node {job_id}" in capsys.readouterr().out

    # the second cell uses what the first assigned on the node: nothing to ship again
    assert session.ship("y = x + base", shell.user_ns) == []
    del shell.user_ns["kept"]  # the session still has it: it lives there, not here
    shell.run_cell_magic("sbatch", f"--session {name}", "y = x + base\nn = len(kept)")
    assert shell.user_ns["y"] == 81
    assert shell.user_ns["n"] == 3

    shell.user_ns["base"] = 1  # changed in the notebook: shipped again
    assert session.ship("z = base", shell.user_ns) == ["base"]

    with pytest.raises(UsageError, match="ZeroDivisionError"):
        shell.run_cell_magic("sbatch", f"--session {name}", "1 / 0")

    shell.run_line_magic("hpc_session", f"stop {name}")
    deadline = time.monotonic() + 15
    while squeue_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue_ids(job_id) == []
    # one job for it all
    assert jobs_named_once_accounted(f"kernel-session-{name}", since, job_id) == [job_id]


def test_a_cell_for_a_session_never_started_is_one_line(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"no session .nope.*%hpc_session start nope"):
        shell.run_cell_magic("sbatch", "--session nope", "x = 1")


def test_the_notebook_kernel_exiting_cancels_its_sessions_jobs(
        slurm_cluster: object, provisioner_registered: None) -> None:
    """A notebook kernel that shuts down (here: a Python that exits) takes its sessions'
    jobs along: no allocation left running until its time limit."""
    script = ("from IPython.core.interactiveshell import InteractiveShell\n"
              "from hpc_magics.core.resources import ResourceRequest\n"
              "from hpc_magics.kernel import session\n"
              "ip = InteractiveShell.instance()\n"
              "ip.run_line_magic('load_ext', 'hpc_magics')\n"
              "ip.magics_manager.registry['HpcMagicsKernel'].request = "
              "ResourceRequest(profile='lab')\n"
              f"ip.run_line_magic('hpc_session', 'start exit{os.getpid()} -t 5')\n"
              f"print('JOB', session.get('exit{os.getpid()}').job_id, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    job_id = next(line.split()[1] for line in done.stdout.splitlines()
                  if line.startswith("JOB "))
    deadline = time.monotonic() + 15
    while squeue_ids(job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert squeue_ids(job_id) == []


def test_a_name_no_cell_assigned_visibly_comes_back_and_hpc_jobs_shows_the_session(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A name made by ``exec`` in the session comes back with a cell that assigns it:
    the session cell is the one way names move."""
    name = f"p{os.getpid()}"
    shell.run_line_magic("hpc_session", f"start {name} -t 5")
    job_id = sessions.get(name).job_id
    capsys.readouterr()

    shell.user_ns["weights"] = [0.5, 1.5]
    shell.run_cell_magic("sbatch", f"--session {name}",
                         "total = sum(weights)\nexec('made_there = 7')")
    assert shell.user_ns["total"] == 2.0
    assert "made_there" not in shell.user_ns  # exec hides it from the cell's names
    shell.run_cell_magic("sbatch", f"--session {name}", "made_there = made_there")
    assert shell.user_ns["made_there"] == 7
    capsys.readouterr()

    shell.run_line_magic("hpc_jobs", "")
    line = next(row for row in capsys.readouterr().out.splitlines()
                if row.split() and row.split()[0] == job_id)
    state, kind, _partition, _elapsed, left, cost, unit, _node, job_name = line.split()[1:]
    assert (state, kind, job_name) == ("RUNNING", "session", f"kernel-session-{name}")
    assert left.endswith(("m", "s")) and not left.startswith("5m")  # under 5 minutes left
    assert float(cost) > 0 and unit == "core-h"  # the lab profile bills by the core
