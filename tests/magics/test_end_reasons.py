"""Why a job ended, in the job widget and %hpc_jobs: the same one line the notebook's error
says (core/jobs.py), and what is left of the allocation under %hpc_jobs.

TIMEOUT and CANCELLED come from real jobs on the host's test cluster. That cluster does not
confine memory (no task/cgroup: tests/magics/test_cgroup_facts.py skips there), so it cannot
end a job OUT_OF_MEMORY; that case is a job folder holding the state the 24.11 release
cluster's accounting recorded for a real job over its --mem (tests/data/slurm/24.11), which
the watcher takes as settled without asking Slurm, as it does any job that ended.
"""

from __future__ import annotations

import getpass
import json
import os
import pwd
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hpc_magics.core.errors import JobFailed
from hpc_magics.core.jobs import end_note
from hpc_magics.core.node_records import node_file
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.kernel.orphans import KERNELS_DIR_ENV
from hpc_magics.scheduler import limits
from hpc_magics.widgets.job import JobWidget
from hpc_magics.widgets.job_view import JobView

if TYPE_CHECKING:  # fixture types only
    from conftest import ThrowawayAccount

RECORDED = Path(__file__).parents[1] / "data" / "slurm" / "24.11" / "sacct-recent.txt"
TIMEOUT_HINT = "it reached its time limit: ask for more with -t"


def test_each_end_slurm_explains_has_its_line_and_the_others_none() -> None:
    assert end_note("TIMEOUT") == TIMEOUT_HINT
    assert end_note("NODE_FAIL") == "its node failed: submit it again"
    assert end_note("PREEMPTED") == "it was preempted: submit it again"
    assert end_note("CANCELLED") == "it was cancelled"
    assert end_note(f"CANCELLED by {os.getuid()}") == "it was cancelled by you"
    other = next(u for u in pwd.getpwall() if u.pw_uid != os.getuid())
    assert end_note(f"CANCELLED by {other.pw_uid}") == f"it was cancelled by {other.pw_name}"
    unknown = max(u.pw_uid for u in pwd.getpwall()) + 1
    assert end_note(f"CANCELLED by {unknown}") == f"it was cancelled by uid {unknown}"
    assert end_note("OUT_OF_MEMORY", 200, 200.0) == (
        "the job ran out of memory: it was limited to 200M (--mem=200M); ask for more "
        "with --mem")
    for quiet in ("COMPLETED", "RUNNING", "PENDING", "FAILED"):
        assert end_note(quiet) == "", quiet  # a plain FAILED: the cell's own error says why
    ended = JobView("7", "train", "NODE_FAIL", "slurm", "/x", False,
                    end_note=end_note("NODE_FAIL"))
    assert ended.story() == "NODE_FAIL: its node failed: submit it again"


def recorded_oom() -> tuple[str, str]:
    """A job id and its state, as 24.11's sacct recorded a real job over its --mem."""
    line = next(row for row in RECORDED.read_text().splitlines()
                if row.split("|")[1] == "OUT_OF_MEMORY")
    fields = line.split("|")
    return fields[0], fields[1]


def test_out_of_memory_in_the_widget_hpc_jobs_and_the_error_alike(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    job_id, state = recorded_oom()
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    folder = JobFolder.create(magics.jobs_root, "rec-oom")
    folder.write_meta({"name": "rec-oom", "backend": "slurm", "job_id": job_id,
                       "state": state, "state_source": "sacct", "request": {"mem_mb": 64},
                       "results": []})
    # what the node side records at the job's start: its cgroup's limit
    (folder.path / node_file(job_id, "c1", "0")).write_text(
        json.dumps({"host": "c1", "limit_mb": 64.0}))
    said = ("the job ran out of memory: it was limited to 64M (--mem=64M); ask for more "
            "with --mem")

    handle = magics.handle_for(job_id)
    with pytest.raises(JobFailed) as failed:
        handle.fetch(show=False)
    assert said in str(failed.value)  # the notebook's error

    widget = JobWidget(handle)
    assert "OUT_OF_MEMORY" in widget.status.value
    assert widget.story.value == f"OUT_OF_MEMORY: {said}"

    shell.run_line_magic("hpc_jobs", f"--state {state}")
    rows = capsys.readouterr().out.splitlines()
    at = next(i for i, row in enumerate(rows) if row.split()[:2] == [job_id, state])
    assert rows[at + 1].strip() == said


@pytest.mark.timeout(300)
def test_timeout_and_cancel_on_the_cluster_in_the_widget_and_hpc_jobs(
        shell: Any, slurm_cluster: Any, sacct_state: Any,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    shell.run_cell_magic("sbatch", "-t 1", "import time\ntime.sleep(600)")
    timed_out = magics.handles[magics.last_job]
    shell.run_cell_magic("sbatch", "-t 5", "import time\ntime.sleep(600)")
    cancelled = magics.handles[magics.last_job]
    shell.run_cell_magic("sbatch", "-t 5", "import os\nos._exit(3)")  # the job itself fails
    failed = magics.handles[magics.last_job]
    widgets = {w.handle.job_id: w for w in shown if isinstance(w, JobWidget)}
    # what %%sbatch displayed
    assert set(widgets) == {timed_out.job_id, cancelled.job_id, failed.job_id}

    sacct_state(cancelled.job_id, until={"RUNNING"}, timeout=60)
    shell.run_line_magic("hpc_cancel", cancelled.job_id)
    assert sacct_state(timed_out.job_id, until={"TIMEOUT"}, timeout=240) == "TIMEOUT"

    # the widgets' own monitor (every 5 s) brings the ends in: nothing here polls for them
    deadline = time.monotonic() + 60
    while not ("TIMEOUT:" in widgets[timed_out.job_id].story.value
               and "CANCELLED:" in widgets[cancelled.job_id].story.value
               and "FAILED" in widgets[failed.job_id].status.value):
        assert time.monotonic() < deadline, [w.story.value for w in widgets.values()]
        time.sleep(0.5)
    assert widgets[timed_out.job_id].story.value == f"TIMEOUT: {TIMEOUT_HINT}"
    # accounting's "CANCELLED by UID", asked once by the monitor with its FAILED jobs
    assert widgets[cancelled.job_id].story.value == "CANCELLED: it was cancelled by you"

    capsys.readouterr()
    shell.run_line_magic("hpc_jobs", "")
    rows = capsys.readouterr().out.splitlines()
    for handle, state, hint in ((timed_out, "TIMEOUT", TIMEOUT_HINT),
                                (cancelled, "CANCELLED", "it was cancelled by you")):
        at = next(i for i, row in enumerate(rows) if row.split()[:1] == [handle.job_id])
        assert rows[at].split()[1] == state and rows[at + 1].strip() == hint, rows
    # a plain FAILED (no step killed for memory, as its steps in sacct say): no line, the
    # cell's own error and log say why
    at = next(i for i, row in enumerate(rows) if row.split()[:1] == [failed.job_id])
    assert rows[at].split()[1] == "FAILED" and not rows[at + 1].startswith(" " * 12), rows
    assert widgets[failed.job_id].story.value == ""
    # every job of yours, the ended ones from the user's shared (cached) sacct answer
    deadline = time.monotonic() + 60
    while True:
        shell.run_line_magic("hpc_jobs", "--all --state TO")
        every = capsys.readouterr().out.splitlines()
        at = next((i for i, row in enumerate(every) if row.split()[:1] == [timed_out.job_id]),
                  None)
        if at is not None or time.monotonic() > deadline:
            break
        time.sleep(2)  # the shared answer is a few seconds old
    assert at is not None and every[at + 1].strip() == TIMEOUT_HINT, every
    with pytest.raises(JobFailed, match=re.escape(TIMEOUT_HINT)):  # the notebook's words
        timed_out.fetch(show=False)
    with pytest.raises(JobFailed, match="it was cancelled by you"):
        cancelled.fetch(show=False)
    # what is left of the allocation, from Slurm's own answer for the user's account
    assert any(re.fullmatch(r"allocation: Slurm sets no limit for account \S+ "
                            r"\(\d+\.\d billing-hours used\)", row) for row in rows), rows


@pytest.mark.timeout(120)
def test_hpc_jobs_warns_when_queued_and_running_jobs_would_exceed_the_allocation(
        shell: Any, slurm_cluster: Any, throwaway_account: ThrowawayAccount,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """A real job held in the queue, 2 nodes for 20 minutes (40 CPU-minutes), on an
    account whose allocation (GrpTRESMins) is 30 billing-minutes."""
    account = throwaway_account("hpcm_test_listing", getpass.getuser(), "billing=30")
    limits.forget()  # sacctmgr's associations as they are now
    # kernels count too: none here, so other tests' and helpers' kernels of this user do not
    monkeypatch.setenv(KERNELS_DIR_ENV, str(tmp_path / "no kernels"))
    shell.run_line_magic("hpc_resources", f"--profile lab --backend slurm -A {account}")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    shell.run_cell_magic("sbatch", "-t 20 -N 2", "#SBATCH --begin=now+3600\nx = 1")
    held = magics.handles[magics.last_job]
    try:
        capsys.readouterr()
        shell.run_line_magic("hpc_jobs", "")
        out = capsys.readouterr().out
    finally:
        held.cancel(wait_s=0)
    row = next(row.split() for row in out.splitlines() if row.split()[:1] == [held.job_id])
    assert row[1] in {"SUBMITTED", "PENDING"}, out  # queued: it counts against what is left
    assert f"allocation: 0.5 of 0.5 billing-hours left for account {account}" in out, out
    assert (f"warning: your 1 queued and running jobs on account {account} may use 0.7 "
            "billing-hours, more than the 0.5 left") in out, out
