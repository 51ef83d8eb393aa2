"""submitit's local controller, ending a job at its time limit as Slurm does: the job's
folder records that the limit was reached (its state is then TIMEOUT,
``scheduler/local_jobs.py``), the tasks' logs say so, and the tasks get SIGTERM first, the
signal a cell stops on under Slurm too (submitit's own SIGINT reached the cell as a
KeyboardInterrupt: a FAILED job). Run as ``python -m hpc_magics.backends.local_controller
FOLDER``, in place of ``submitit.local._local``.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from submitit.local.local import Controller

from ..jobfolder.folder import JobFolder
from ..scheduler.local_jobs import TIME_LIMIT_REACHED

# Slurm's KillWait, shorter: how long the tasks have after SIGTERM before submitit's
# SIGINT and SIGKILL (a stopped cell saves its figures and exits in well under that)
STOP_WAIT_S = 10.0


class TimeLimitController(Controller):
    def wait(self, freq: int = 24) -> Sequence[int | None]:
        codes = super().wait(freq)
        if all(code is not None for code in codes):  # the tasks ended by themselves
            return codes
        JobFolder(self.folder).update_meta(**{TIME_LIMIT_REACHED: time.time()})
        minutes = self.timeout_s / 60
        for log in {id(f): f for f in self.stderrs}.values():  # one line, as slurmstepd's
            log.write(f"[hpc_magics] job {self.pid} stopped: it reached its time limit "
                      f"({minutes:g} min)\n")
            log.flush()
        self._forward_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while any(task.poll() is None for task in self.tasks) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [task.poll() for task in self.tasks]  # kill_tasks ends any still running


if __name__ == "__main__":
    TimeLimitController(Path(sys.argv[1])).run()
