"""One ``squeue`` and one ``sacct`` per interval per user, however many kernels and widgets.

Counting wrappers for ``squeue`` and ``sacct`` go first on PATH of three real kernels
(they log each call, then run the real command). The kernels share one user's runtime
dir, as a user's kernels do; each tracks all 200 real jobs (100 held, pending all along;
100 that start over the minute (``--begin``) and end at once, so accounting is asked
all along), shows widgets for 10 of them between them, and polls the watcher every half
second on top, like an impatient notebook. Over a minute (twenty intervals) the calls stay
within one per interval each.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.cluster import cluster_name

INTERVAL_S = 3.0
WINDOW_S = 60.0
KERNELS = 3
WIDGETS = (4, 3, 3)  # 10 widgets over the three kernels


def counting_wrapper(folder: Path, command: str, log: Path) -> None:
    real = shutil.which(command)
    assert real, f"{command} is not installed"
    script = folder / command
    script.write_text("#!/bin/sh\n"
                      f'echo "$(date +%s.%N) {command} $*" >> {log}\n'
                      f'exec {real} "$@"\n')
    script.chmod(0o755)


def submit_many(count: int, *args: str, output: Path, spread_s: int = 0
                ) -> list[tuple[str, float, float]]:
    jobs = []
    for index in range(count):
        begin = [f"--begin=now+{index * spread_s // count}"] if spread_s else []
        started = time.time()
        answer = commands.run(["sbatch", "--parsable", "-t", "2", "-o", str(output), *args,
                               *begin, "--wrap", "true"], timeout=30)
        assert answer.ok, answer.stderr
        jobs.append((answer.stdout.strip().split(";")[0], started, time.time()))
    return jobs


KERNEL_CODE = """
import threading, time
from pathlib import Path
from hpc_magics.backends import get_backend
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.handle import JobHandle
from hpc_magics.scheduler.watcher import watcher
from hpc_magics.magics.widget_monitor import job_widget

folders = [JobFolder(Path(p)) for p in {paths!r}]
backend = get_backend("slurm")
shown = [job_widget(JobHandle(JobFolder(Path(p)).meta()["job_id"], backend, JobFolder(Path(p))))
         for p in {widget_paths!r}]

def impatient():
    end = time.time() + {window}
    while time.time() < end:
        watcher().poll(folders)
        time.sleep(0.5)

threading.Thread(target=impatient, daemon=True).start()
"""


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_three_kernels_ten_widgets_200_jobs_stay_within_one_call_per_interval(
        slurm_cluster: Any, tmp_path: Path) -> None:
    from jupyter_client.manager import KernelManager

    log = tmp_path / "calls.log"
    log.touch()
    shims = tmp_path / "shims"
    shims.mkdir()
    for command in ("squeue", "sacct"):
        counting_wrapper(shims, command, log)
    held = submit_many(100, "-H", output=tmp_path / "held-%j.out")
    quick = submit_many(100, output=tmp_path / "quick-%j.out", spread_s=int(WINDOW_S) - 20)
    kernels: list[Any] = []
    outputs: list[Any] = []
    try:
        root = tmp_path / "jobs"
        paths = []
        for job_id, started, returned in held + quick:
            folder = JobFolder.create(root, f"job-{job_id}")
            folder.write_meta({"name": f"job-{job_id}", "backend": "slurm", "job_id": job_id,
                               "state": "SUBMITTED", "submitted_at": started,
                               "submit_returned_at": returned, "cluster": cluster_name()})
            paths.append(str(folder.path))
        env = dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ['PATH']}",
                   JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                   HPC_MAGICS_POLL_INTERVAL=str(INTERVAL_S),
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        # widgets both on held jobs and on jobs that end: every kernel needs both calls
        picks = [paths[i] for i in (0, 1, 100, 101, 2, 102, 103, 3, 104, 105)]
        first = 0
        started = time.time()
        for index in range(KERNELS):
            manager = KernelManager(kernel_name="python3")
            manager.start_kernel(env=env)
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=60)
            kernels.append((manager, client))
            mine = picks[first:first + WIDGETS[index]]
            first += WIDGETS[index]
            code = KERNEL_CODE.format(paths=paths, widget_paths=mine, window=WINDOW_S)
            reply = client.execute_interactive(code, timeout=60)
            assert reply["content"]["status"] == "ok", reply["content"]
        time.sleep(WINDOW_S)
        ended = time.time()
        # still alive and tracking: the kernels' widgets show real states
        for _, client in kernels:
            reply = client.execute_interactive(
                "import json; print(json.dumps(sorted({w.handle.status.state for w in shown})))",
                timeout=60, output_hook=lambda msg: outputs.append(msg))
            assert reply["content"]["status"] == "ok"
    finally:
        for manager, client in kernels:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        commands.run(["scancel", *[job_id for job_id, _, _ in held]], timeout=60)
    states = {s for msg in outputs if msg["msg_type"] == "stream"
              for s in json.loads(msg["content"]["text"])}
    assert "PENDING" in states and "COMPLETED" in states, states
    calls: dict[str, list[float]] = {"squeue": [], "sacct": []}
    for line in log.read_text().splitlines():
        when, command = line.split()[:2]
        if started <= float(when) <= ended:
            calls[command].append(float(when))
    allowed = int((ended - started) / INTERVAL_S) + 1
    for command, times in calls.items():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert len(times) <= allowed, (command, len(times), allowed)
        # one per interval: never two within one interval (0.2 s for the clock reading)
        assert not gaps or min(gaps) >= INTERVAL_S - 0.2, (command, min(gaps))
    assert len(calls["squeue"]) >= allowed // 2, calls  # they really did poll all along
    assert calls["sacct"], "the jobs that ended were never asked about"

