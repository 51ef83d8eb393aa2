"""Drill: slurmctld stops while a job runs and while polls are in flight (maintenance, a
crash). Every call a kernel, widget or server makes still answers within a second; the
job shows its last state with "scheduler unreachable, retrying", never as ended or failed;
a cancel and a new cell are refused at once, not hung; when slurmctld is back the job
completes and its results arrive (nothing is lost), and a new cell is accepted and
cancelled at once."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import pytest
from IPython.core.error import UsageError
from server.conftest import StartInJob, StartLocal

import hpc_magics
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.queue import SCHEDULER_SILENT
from hpc_magics.widgets.job import JobWidget

from .conftest import Stopwatch, last_handle, outage, sacct_state, wait_for

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(240)]

CELL = ("print('the cell runs', flush=True)\nimport time\ntime.sleep(15)\n"
        "answer = 'survived the outage'")
SERVER_CONFIG = "c.HpcMagicsServer.jobs_poll_interval_s = 2\n"


def test_slurmctld_stopped_mid_job_and_mid_poll(
        drill_shell: Any, stopwatch: Stopwatch, local_server: StartLocal,
        server_in_job: StartInJob, capsys: pytest.CaptureFixture[str]) -> None:
    server = local_server(config_py=SERVER_CONFIG)
    # a server running in a Slurm job, as a hub starts it, asking about its own job often
    hub = server_in_job("--HpcMagicsServer.own_job_refresh_s=1",
                        "--HpcMagicsServer.jobs_poll_interval_s=2")
    assert hub.get("hpc-magics/server").json()["job_id"] == hub.job
    drill_shell.run_cell_magic("sbatch", "", CELL)
    handle = last_handle(drill_shell)
    wait_for(lambda: handle.refresh(max_age_s=0) == "RUNNING", 60, "the job running")
    # and its cell running: squeue says RUNNING once the batch script starts, before the
    # cell's srun step exists, and an srun begun while slurmctld is away cannot confirm its
    # allocation and fails the job (Slurm's own behaviour: a job starting during an outage)
    wait_for(lambda: "the cell runs" in handle.log(), 60, "the cell running")
    widget = JobWidget(handle)

    # each poll: was the controller away when it began, and still away when it returned?
    polls: list[tuple[bool, bool]] = []  # one in flight when the controller goes, too
    away = threading.Event()
    stop_polling = threading.Event()

    def poll() -> None:
        while not stop_polling.is_set():
            began_away = away.is_set()
            handle.refresh(max_age_s=0)
            polls.append((began_away, away.is_set()))
            time.sleep(0.2)  # in flight often, yet no hot loop against the controller

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    notes: set[str] = set()
    try:
        with outage("slurmctld"):
            away.set()
            deadline = time.monotonic() + 12
            while time.monotonic() < deadline:
                state = stopwatch.quick("handle.refresh", lambda: handle.refresh(max_age_s=0))
                assert state in {"RUNNING", "COMPLETING"}, f"shown as {state} while Slurm is away"
                notes.add(handle.status.note)
                stopwatch.quick("handle.state", lambda: handle.state)
                stopwatch.quick("hpc_magics.job", lambda: hpc_magics.job(handle.job_id))
                stopwatch.quick("%hpc_jobs", lambda: drill_shell.run_line_magic("hpc_jobs", ""))
                stopwatch.quick("widget refresh", widget.refresh)
                jobs = stopwatch.quick("GET /hpc-magics/jobs",
                                       lambda: server.get("hpc-magics/jobs"))
                assert jobs.status_code == 200
                stopwatch.quick("GET /hpc-magics/server",
                                lambda: server.get("hpc-magics/server"))
                own = stopwatch.quick("GET /hpc-magics/server (in a job)",
                                      lambda: hub.get("hpc-magics/server"))
                assert own.status_code == 200 and own.json()["job_id"] == hub.job
                time.sleep(0.5)
            assert SCHEDULER_SILENT in notes, notes
            assert SCHEDULER_SILENT in widget.status.value
            assert SCHEDULER_SILENT in capsys.readouterr().out  # %hpc_jobs said so
            assert jobs.json()["error"], "the server's job list hid the outage"
            with pytest.raises(UsageError, match="cannot cancel"):
                stopwatch.quick("%hpc_cancel", lambda: drill_shell.run_line_magic(
                    "hpc_cancel", handle.job_id))
            refused = stopwatch.quick("POST /hpc-magics/jobs/ID/cancel", lambda: server.post(
                f"hpc-magics/jobs/{handle.job_id}/cancel"))
            assert refused.status_code == 502 and "cannot cancel" in refused.text
            # a new cell is refused at once, not after sbatch's own minute of retries
            jobs_root = handle.folder.path.parent
            folders = set(jobs_root.iterdir())
            refused_name = f"during-the-outage-{secrets.token_hex(3)}"  # this run's own
            with pytest.raises(UsageError, match=r"controller does not answer.*nothing was "
                                                 r"submitted; run the cell again"):
                stopwatch.quick("%%sbatch", lambda: drill_shell.run_cell_magic(
                    "sbatch", f"--name {refused_name}", "x = 1"))
            assert set(jobs_root.iterdir()) == folders, "a refused cell left a job folder"
            # a dry run submits nothing: it shows the script, answer or not
            stopwatch.quick("%%sbatch --dry-run", lambda: drill_shell.run_cell_magic(
                "sbatch", "--name dry-during-the-outage --dry-run", "x = 1"))
            assert "#SBATCH --job-name=dry-during-the-outage" in capsys.readouterr().out
            assert set(jobs_root.iterdir()) == folders, "a dry run left a job folder"
            away.clear()
    finally:
        stop_polling.set()
        poller.join(timeout=30)
    # ordering, not a clock: the polls begun while Slurm was away returned while it still
    # was (none waited for it), but the last one, which may have been in flight at its return
    during = [returned_away for began_away, returned_away in polls if began_away]
    assert len(during) >= 2 and all(during[:-1]), f"polls waited for the controller: {polls}"

    # back: the job completes as if nothing happened, and its results arrive
    assert handle.wait(timeout=120) == "COMPLETED"
    drill_shell.run_line_magic("hpc_fetch", handle.job_id)
    assert drill_shell.user_ns["answer"] == "survived the outage"
    wait_for(lambda: server.get("hpc-magics/jobs").json()["error"] is None, 60,
             "the server's job list recovering")
    assert handle.status.note == ""
    assert sacct_named(refused_name) == "", "the refused cell reached Slurm"

    # back: a new cell is accepted, and cancelling it answers at once, widget or magic
    for how in ("%hpc_cancel", "the widget's Cancel"):
        submit_and_cancel(drill_shell, stopwatch, capsys, how)


def submit_and_cancel(shell: Any, stopwatch: Stopwatch, capsys: pytest.CaptureFixture[str],
                      how: str) -> None:
    shell.run_cell_magic("sbatch", "--name after-the-outage", "import time\ntime.sleep(300)")
    job = last_handle(shell)
    wait_for(lambda: job.refresh(max_age_s=0) == "RUNNING", 60, "the new job running")
    if how == "%hpc_cancel":
        stopwatch.quick(how, lambda: shell.run_line_magic("hpc_cancel", job.job_id))
        said = capsys.readouterr().out
        assert f"job {job.job_id}: CANCELLED" in said or "cancel sent" in said, said
    else:
        widget = JobWidget(job)
        widget.cancel_button.click()  # asks first
        stopwatch.quick(how, widget.confirm_yes.click)
    wait_for(lambda: sacct_state(job.job_id) == "CANCELLED", 60, f"{how}: CANCELLED")


def sacct_named(name: str) -> str:
    answer = commands.run(["sacct", "-n", "-X", "-P", "-S", "now-1hours", "--name", name,
                           "-o", "JobID"], timeout=30)
    assert answer.ok, answer.stderr
    return answer.stdout.strip()
