"""submitit's local executor, with its controller (``local_controller.py``: the time limit
ends a job TIMEOUT) started through the one subprocess door (``commands.start``: its own
process group, its output in ``controller.log``, not the notebook) and cancelled as under
Slurm (SIGTERM, then SIGKILL, to the group). The controller's pid is the job's id; its
start time goes in meta.json at once, so a later kernel knows that very process
(``scheduler/processes.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import submitit
from submitit.local.local import LocalJob

from ..jobfolder.folder import JobFolder
from ..scheduler import commands, processes
from ..scheduler.local_jobs import PROCESS_STARTED

CONTROLLER_LOG = "controller.log"
CONTROLLER = "hpc_magics.backends.local_controller"  # submitit's, ending a job TIMEOUT


class LocalProcessJob(LocalJob[Any]):
    def cancel(self, check: bool = True) -> None:
        if self._process is not None:
            commands.stop_group(self._process)

    def __del__(self, _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        # at the interpreter's exit submitit's clean-up finds its modules torn down (their
        # names None: hence the default argument, bound while they stand) and printed a
        # TypeError a job; it never got as far as a cancel, so skipping it there changes
        # nothing (a job outlives its kernel, as a Slurm job does)
        if not _finalizing():
            super().__del__()


class LocalProcessExecutor(submitit.LocalExecutor):
    """``LocalExecutor`` whose ``_submit_command`` is submitit's ``start_controller``
    through ``commands.start``, starting ``CONTROLLER``."""

    def _submit_command(self, command: str) -> Any:
        ntasks = self.parameters.get("tasks_per_node", 1)
        environ = dict(os.environ)
        environ.update(  # what submitit.local.local.start_controller sets
            SUBMITIT_LOCAL_NTASKS=str(ntasks), SUBMITIT_LOCAL_COMMAND=command,
            SUBMITIT_LOCAL_TIMEOUT_S=str(int(60 * self.parameters.get("timeout_min", 2.0))),
            SUBMITIT_LOCAL_SIGNAL_DELAY_S=str(int(self.parameters.get("signal_delay_s", 30))),
            SUBMITIT_LOCAL_NODEID="0", SUBMITIT_LOCAL_JOB_NUM_NODES="1",
            SUBMITIT_STDERR_TO_STDOUT="", SUBMITIT_EXECUTOR="local",
            CUDA_VISIBLE_DEVICES="", SUBMITIT_LOCAL_WITH_SHELL="")
        self.folder.mkdir(parents=True, exist_ok=True)
        process = commands.start([sys.executable, "-m", CONTROLLER, str(self.folder)],
                                 log=self.folder / CONTROLLER_LOG, environ=environ)
        # not yet reaped (this process waits for it): its start time is readable even if
        # it has ended already
        JobFolder(self.folder).update_meta(**{PROCESS_STARTED: processes.started(process.pid)})
        return LocalProcessJob(folder=self.folder, job_id=str(process.pid), process=process,
                               tasks=list(range(ntasks)))
