"""``%hpc_session start|stop|list`` and what ``%%sbatch --session NAME`` calls."""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument

from ..core.errors import HpcMagicsError
from ..magics.arguments import lazy_magic_arguments as magic_arguments
from ..magics.jobs import _arguments, resource_arguments


def _hpc(shell: Any) -> Any:
    """The %%sbatch magics of this shell: their session defaults and request parsing."""
    hpc = shell.magics_manager.registry.get("HpcMagics")
    if hpc is None:
        raise UsageError("%load_ext hpc_magics first")
    return hpc


@magics_class
class SessionMagics(Magics):
    @magic_arguments()
    @argument("action", choices=["start", "stop", "list"],
              help="start a session, stop it, or list the sessions")
    @argument("name", nargs="?", help="the session's name")
    @argument("--jobid", metavar="ID", default=None,
              help="start the session as a step of this allocation of yours")
    @resource_arguments
    @line_magic
    def hpc_session(self, line: str) -> Any:
        """A kernel on a compute node that keeps its variables between cells.

        ``%hpc_session start NAME [sbatch options]`` submits a job (or, with ``--jobid``, a
        step of your allocation) running a kernel; ``%%sbatch --session NAME`` runs a cell
        there; ``%hpc_session stop NAME`` shuts it down and cancels its job.
        """
        from . import session as sessions  # on first use: %load_ext stays cheap

        args = _arguments(self.hpc_session, line)
        if args.action == "list":
            for name, running in sorted(sessions._SESSIONS.items()):
                print(f"{name}: job {running.job_id} ({running.folder})")
            return None
        if not args.name:
            raise UsageError(f"%hpc_session {args.action} needs the session's NAME")
        try:
            if args.action == "stop":
                job_id = sessions.stop(args.name)
                print(f"[hpc_magics] session {args.name} stopped; job {job_id} cancelled")
                return None
            hpc = _hpc(self.shell)
            request = hpc._apply(hpc.request, args).changed(backend="slurm")
            started = sessions.start(args.name, request, hpc.python or sys.executable,
                                     args.jobid)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        print(f"[hpc_magics] session {args.name}: job {started.job_id} runs the kernel; "
              f"%%sbatch --session {args.name} runs a cell there")
        return None

