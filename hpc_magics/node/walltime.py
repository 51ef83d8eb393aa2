"""Walltime warnings inside a Python kernel that runs as a Slurm job.

Loaded into the node's ipykernel (``kernel.py``), this says in the notebook that the time
limit is near, at the server's warning minutes: once on stderr when the moment comes (a
background thread), and again at the top of the next cell the user runs.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

WARN_MINUTES_ENV = "HPC_MAGICS_KERNEL_WARN_MINUTES"
DEFAULT_WARN_MINUTES = (15.0, 5.0)  # as the server's walltime warnings (server/status.py)
EXTENSION_ARGUMENT = f"--IPKernelApp.extra_extensions={__name__}"


def warn_minutes(environ: Mapping[str, str] | None = None) -> tuple[float, ...]:
    """The minutes before the end to warn at, largest first (``15,5`` by default)."""
    text = (os.environ if environ is None else environ).get(WARN_MINUTES_ENV, "")
    try:
        chosen = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        chosen = ()
    return tuple(sorted((m for m in chosen if m > 0), reverse=True)) or DEFAULT_WARN_MINUTES


class Warnings:
    """Which warnings are due; each is said once (the most urgent one, when several are)."""

    def __init__(self, job_id: str, end_time: float, minutes: tuple[float, ...],
                 started: float | None = None) -> None:
        self.job_id, self.end_time = job_id, end_time
        # a job shorter than a warning's minutes was asked for so: no warning at its start
        self.pending = sorted((m for m in minutes if started is None or
                               end_time - m * 60 > started), reverse=True)

    def next_at(self) -> float | None:
        """When the next warning falls due (epoch seconds), or None when all were said."""
        return self.end_time - self.pending[0] * 60 if self.pending else None

    def due(self, now: float) -> str | None:
        passed = [m for m in self.pending if now >= self.end_time - m * 60]
        if not passed:
            return None
        self.pending = [m for m in self.pending if m not in passed]
        left = max(0.0, (self.end_time - now) / 60)
        at = time.strftime("%H:%M", time.localtime(self.end_time))
        return (f"[hpc_magics] this kernel's Slurm job {self.job_id} reaches its time limit "
                f"in {left:.0f} min (at {at}): Slurm then ends the kernel and its variables "
                f"are lost. Save what you need now.\n")


def watch(warnings: Warnings, say: Callable[[str], None],
          clock: Callable[[], float] = time.time,
          sleep: Callable[[float], None] = time.sleep) -> None:
    """Say each warning when it falls due (run in a daemon thread)."""
    while (at := warnings.next_at()) is not None:
        sleep(max(0.0, at - clock()))
        if text := warnings.due(clock()):
            say(text)


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def load_ipython_extension(ipython: Any) -> None:
    from ..scheduler.own_job import own_job

    job = own_job()
    if job is None or job.end_time is None:
        return  # not in a job, or one without a time limit: nothing will end the kernel
    minutes, now = warn_minutes(), time.time()
    for_cells = Warnings(job.job_id, job.end_time, minutes, now)

    def before_a_cell(*_: Any) -> None:
        if text := for_cells.due(time.time()):
            _stderr(text)

    ipython.events.register("pre_run_cell", before_a_cell)
    thread = threading.Thread(target=watch, name="hpc_magics-walltime", daemon=True,
                              args=(Warnings(job.job_id, job.end_time, minutes, now), _stderr))
    thread.start()
