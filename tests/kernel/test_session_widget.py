"""The session's job widget, through a real IPython shell, real ipywidgets and a real session
kernel on the test cluster: ``%hpc_session start`` and ``list`` show the job's state, node
and time left (fed by the widget monitor from the watcher), a ``%%sbatch --session`` cell
says which session ran it, and the widget's Stop ends the session and its job."""

from __future__ import annotations

import getpass
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hpc_magics.kernel import session as sessions
from hpc_magics.kernel.orphans import KERNELS_DIR_ENV
from hpc_magics.scheduler import live
from hpc_magics.widgets.session import SessionWidget

from .conftest import squeue_ids

if TYPE_CHECKING:  # fixture types only
    from conftest import ThrowawayAccount

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def until(check: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what()
        time.sleep(0.5)


def test_the_session_widget_shows_the_job_and_its_stop_ends_the_session(
        shell: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, throwaway_account: ThrowawayAccount) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    # this test's own kernel folders: other kernels of the user (other tests', other
    # helpers') would count against the allocation below too
    monkeypatch.setenv(KERNELS_DIR_ENV, str(tmp_path / "kernels"))
    name = f"w{os.getpid()}"
    account = throwaway_account("hpcm_test_session", getpass.getuser(), "billing=3")
    live.forget()  # sacctmgr's associations as they are now
    shell.run_line_magic("hpc_session", f"start {name} -t 5 -A {account}")
    job_id = sessions.get(name).job_id
    [widget] = [w for w in shown if isinstance(w, SessionWidget)]
    assert widget.handle.job_id == job_id and f"session {name}" in widget.status.value

    # the monitor (every 5 s, one batched poll) brings in the running job's node and time
    until(lambda: "RUNNING" in widget.status.value and "left" in widget.story.value,
          lambda: (widget.status.value, widget.story.value))
    story = widget.story.value
    assert story.startswith("running on c") and "of 5m" in story, story
    assert not widget.cancel_button.disabled and widget.cancel_button.description == \
        "Stop session"
    assert widget.get_state()["children"]  # a real widget model, as the front end sees it

    capsys.readouterr()
    shell.run_cell_magic("sbatch", f"--session {name}", "x = 41 + 1")
    host = sessions.get(name).host
    assert host  # the node's name, as the session's kernel reported it
    assert f"[hpc_magics] session {name}: job {job_id} on {host} runs this cell" in \
        capsys.readouterr().out
    assert shell.user_ns["x"] == 42

    # the session's job counts against the allocation %hpc_jobs shows: 5 CPU-minutes at
    # most on an account with 3 billing-minutes (the test cluster does not enforce limits,
    # so the session runs)
    shell.magics_manager.registry["HpcMagicsKernel"].jobs_dir = str(tmp_path / "jobs")  # no cells
    shell.run_line_magic("hpc_jobs", "")
    listing = capsys.readouterr().out
    assert f"allocation: 0.1 of 0.1 billing-hours left for account {account}" in listing
    assert f"warning: your 1 queued and running jobs on account {account} may use" in \
        listing, listing

    shell.run_line_magic("hpc_session", "list")
    listed = [w for w in shown if isinstance(w, SessionWidget) and w is not widget]
    assert [w.handle.job_id for w in listed] == [job_id]

    widget.cancel_button.click()  # asks first
    assert widget.confirm.layout.display is None and name in widget.confirm_text.value
    assert name in sessions._SESSIONS
    widget.confirm_yes.click()
    assert name not in sessions._SESSIONS  # the session itself ended, not only its job
    assert widget.cancel_button.layout.display == "none"  # no second Stop while it ends
    assert f"session {name} stopped: its kernel shut down and its job {job_id} ends" in \
        widget.message.value
    until(lambda: not squeue_ids(job_id), lambda: f"job {job_id} still in squeue",
          timeout=15)
    # the monitor shows the end as Slurm tells it: the kernel exited, so its job COMPLETED
    # (CANCELLED when the shutdown had to cancel it)
    until(lambda: any(state in widget.status.value for state in ("COMPLETED", "CANCELLED")),
          lambda: widget.status.value)
    assert widget.cancel_button.layout.display == "none"
