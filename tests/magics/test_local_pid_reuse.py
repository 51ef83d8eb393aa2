"""A local job is known by its controller's pid and start time: after the pid is reused, the
job is not shown as running and a cancel signals nothing.

A real reuse, not a fake: the test runs in a new pid namespace (``unshare`` as the user,
its own user namespace mapping it to root there), where ``/proc/sys/kernel/ns_last_pid``
hands the ended controller's pid to an unrelated process. A kernel submits a local job and
its controller is killed (the job leaves no results, as after an OOM kill); a later kernel
(another process: nothing started there) looks at the job and cancels it, as
``hpc_magics.job(ID)`` and ``%hpc_cancel ID`` do after a restart.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the kernel that submits: one local job that would run long, its controller then killed
SUBMIT = """
import os, signal, sys
from IPython.core.interactiveshell import InteractiveShell
from hpc_magics.core.resources import ResourceRequest
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "hpc_magics")
magics = ip.magics_manager.registry["HpcMagicsKernel"]
magics.jobs_dir = sys.argv[1]
magics.request = ResourceRequest(profile="generic")
ip.run_cell_magic("sbatch", "--backend local -t 5", "import time\\ntime.sleep(600)")
pid = int(magics.last_job)
os.killpg(pid, signal.SIGKILL)  # the controller leads its group, the cell's process in it
os.waitpid(pid, 0)
print(magics.last_job, magics.jobs_root, flush=True)
"""

# an unrelated process of the user's: notes the signals it gets (SIGWINCH: the test's mark)
UNRELATED = """
import signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
for number in (signal.SIGTERM, signal.SIGWINCH):
    signal.signal(number, lambda got, frame: log.write(signal.Signals(got).name + "\\n"))
log.write("ready\\n")
while True:
    time.sleep(1)
"""

# the new pid namespace's first process: submits (SUBMIT), reaps what the kill left, hands
# the controller's pid to UNRELATED, then looks at the job and cancels it as a later kernel
DRIVER = """
import json, os, signal, subprocess, sys, time
from pathlib import Path
jobs, log, SUBMIT, UNRELATED = sys.argv[1], Path(sys.argv[2]), *sys.argv[3:5]
submitted = subprocess.run([sys.executable, "-c", SUBMIT, jobs], capture_output=True,
                           text=True, timeout=180)
assert submitted.returncode == 0, submitted.stderr
job_id, jobs_root = submitted.stdout.split()[-2:]
while True:  # the first process of a namespace reaps its orphans: their pids come free
    try:
        os.wait()
    except ChildProcessError:
        break
Path("/proc/sys/kernel/ns_last_pid").write_text(str(int(job_id) - 1))
unrelated = subprocess.Popen([sys.executable, "-c", UNRELATED, str(log)],
                             start_new_session=True)
answer = {"job_id": job_id, "unrelated": unrelated.pid}
deadline = time.monotonic() + 60
while "ready" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
    time.sleep(0.05)

from hpc_magics.attach import attach
handle = attach(job_id, Path(jobs_root))
answer["state"] = handle.refresh()
handle.cancel(wait_s=1.0)
answer["state_after_cancel"] = handle.refresh()
os.kill(unrelated.pid, signal.SIGWINCH)  # after the cancel's signal, had there been one
while "SIGWINCH" not in log.read_text() and time.monotonic() < deadline:
    time.sleep(0.05)
answer["signals"] = log.read_text().split()
unrelated.kill()
unrelated.wait(timeout=30)
print(json.dumps(answer), flush=True)
"""


def in_new_pid_namespace(arguments: list[str]) -> list[str]:
    return ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
            *arguments]


@pytest.mark.timeout(300)
def test_a_reused_pid_is_not_the_local_job(tmp_path: Path) -> None:
    probe = subprocess.run(in_new_pid_namespace(["true"]), capture_output=True, text=True,
                           timeout=30, check=False) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("no user and pid namespaces here (unshare): a pid cannot be reused "
                    f"on demand ({probe.stderr.strip() if probe else 'no unshare'})")
    ran = subprocess.run(in_new_pid_namespace(
        [sys.executable, "-c", DRIVER, str(tmp_path / "jobs"), str(tmp_path / "signals"),
         SUBMIT, UNRELATED]),
        capture_output=True, text=True, timeout=280, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    answer = json.loads(ran.stdout.splitlines()[-1])
    # the controller's pid now names the unrelated process (a real reuse)
    assert answer["unrelated"] == int(answer["job_id"]), answer
    assert answer["state"] != "RUNNING", answer
    assert answer["state_after_cancel"] != "RUNNING", answer
    # its signals, in the order sent: the test's mark only, never the cancel's SIGTERM
    assert answer["signals"] == ["ready", "SIGWINCH"], answer
