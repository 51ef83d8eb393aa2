"""Stopping the server from %hpc_server (Notebook 7, classic) minds the jobs started from it:
the confirmation lists them; a ticked one is cancelled, the others keep running."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import StartLocal, execute

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

SUBMIT = """%load_ext hpc_magics
import hpc_magics
%hpc_resources --profile lab --backend slurm -t 5
"""
SLEEPER = "%%sbatch --name {name}\nimport time\ntime.sleep(300)\n"
STOP_TICKING = """
from hpc_magics.server.client import ServerControl
from hpc_magics.widgets.server import ServerWidget
control = ServerControl.discover()
widget = ServerWidget(control.status(), stop_target=control.stop_target,
                      read_status=control.status, stop=control.stop, tick_s=None,
                      read_jobs=control.jobs_from_this_server, cancel_job=control.cancel_job)
widget.stop_button.click()
for box in widget.job_boxes:
    print("offered:", box.job_id, box.description, box.value, flush=True)
    box.value = box.job_id == {cancel!r}
widget.confirm_button.click()
print("said:", widget.message.value, flush=True)
"""


def queue_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip() if answer.ok else ""


def test_the_server_widget_cancels_only_the_ticked_job(
        local_server: StartLocal, slurm_cluster: Any, sacct_state: Any) -> None:
    server = local_server()
    session = server.post("api/sessions", json={"path": "stop.ipynb", "type": "notebook",
                                                "kernel": {"name": "python3"}})
    kernel = session.json()["kernel"]["id"]
    execute(server, kernel, SUBMIT)
    ids = []
    try:
        for name in ("stop-cancel-me", "stop-keep-me"):
            execute(server, kernel, SLEEPER.format(name=name), timeout=90)
            ids.append(execute(server, kernel, "print(hpc_magics.job().job_id)").strip())
        cancel, keep = ids
        said = execute(server, kernel, STOP_TICKING.format(cancel=cancel), timeout=90)
        for job_id, name in ((cancel, "stop-cancel-me"), (keep, "stop-keep-me")):
            assert f"offered: {job_id} cancel job {job_id} “{name}”" in said, said
        assert said.count("offered:") == 2 and " True" not in said, "nothing ticked at first"
        assert server.process is not None and server.process.wait(timeout=60) == 0
        assert sacct_state(cancel, until={"CANCELLED"}, timeout=30) == "CANCELLED"
        time.sleep(2)
        assert queue_state(keep) in {"PENDING", "RUNNING"}, "an unticked job outlives it"
        if "said:" in said:  # the kernel may go before its last output gets out
            assert f"Cancelled: job {cancel}." in said
            assert f"Still running, as you chose: job {keep}." in said
    finally:
        for job_id in ids:
            commands.run(["scancel", job_id], timeout=30)
