"""``%hpc_session start|stop|list`` and what ``%%sbatch --session NAME`` calls."""

from __future__ import annotations

import os
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument

from ..core.errors import HpcMagicsError
from ..magics.arguments import lazy_magic_arguments as magic_arguments
from ..magics.arguments import parsed_arguments, resource_arguments
from .tunnel_routes import TUNNELS


def run_in_session(shell: Any, name: str, cell: str) -> None:
    """``%%sbatch --session NAME``: the cell in the session; its assigned names come back."""
    from ..magics.submission import sending_cell
    from . import session as sessions

    try:
        session = sessions.get(name)
        on = f" on {session.host}" if session.host else ""
        print(f"[hpc_magics] session {name}: job {session.job_id}{on} runs this cell")
        session.run(cell, shell.user_ns, sending_cell(shell))
    except HpcMagicsError as error:
        remote = getattr(error, "remote_traceback", "")
        if remote:
            print(remote, file=sys.stderr)
        raise UsageError(str(error)) from None


def _hpc(shell: Any) -> Any:
    """The %%sbatch magics of this shell: their session defaults and request parsing."""
    hpc = shell.magics_manager.registry.get("HpcMagicsKernel")
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
    @argument("--tunnel", choices=list(TUNNELS), default=None,
              help="reach the session's kernel by tcp (the node's address) or through "
              "`ssh NODE` (default: the profile's [kernel] tunnel, else tcp)")
    @resource_arguments
    @line_magic
    def hpc_session(self, line: str) -> Any:
        """A kernel on a compute node that keeps its variables between cells.

        ``%hpc_session start NAME [sbatch options]`` submits a job (or, with ``--jobid``, a
        step of your allocation) running a kernel; ``%%sbatch --session NAME`` runs a cell
        there (shipping the names it reads, bringing back those it assigns);
        ``%hpc_session stop NAME`` shuts it down and cancels its job.
        """
        from . import session as sessions  # on first use: %load_ext stays cheap

        args = parsed_arguments(self.hpc_session, line)
        if args.action == "list":
            for name, running in sorted(sessions._SESSIONS.items()):
                print(f"{name}: job {running.job_id} ({running.folder})")
                show_session(name, running)
            if not sessions._SESSIONS:
                print("[hpc_magics] no sessions: %hpc_session start NAME [sbatch options]")
            offer_left_behind()
            return None
        if not args.name:
            raise UsageError(f"%hpc_session {args.action} needs the session's NAME")
        try:
            if args.action == "stop":
                job_id = sessions.stop(args.name)
                print(f"[hpc_magics] session {args.name} stopped; job {job_id} cancelled")
                return None
            hpc = _hpc(self.shell)
            request = hpc.apply(hpc.request, args).changed(backend="slurm")
            # HPC_MAGICS_PYTHON, as for a cell (README: "The interpreter")
            python = os.environ.get("HPC_MAGICS_PYTHON") or sys.executable
            started = sessions.start(args.name, request, python,
                                     args.jobid, args.tunnel)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        print(f"[hpc_magics] session {args.name}: job {started.job_id} runs the kernel; "
              f"%%sbatch --session {args.name} runs a cell there")
        show_session(args.name, started)
        return None


def show_session(name: str, session: Any) -> Any:
    """Display the session's job widget (state, node, time left, Stop); return it."""
    from IPython.display import display

    from ..magics.widget_monitor import job_widget
    from . import session as sessions

    widget = job_widget(session.handle, name, lambda: sessions.stop(name))
    display(widget)
    return widget


def offer_left_behind() -> None:
    """Say which kernel jobs of this user outlived the process that started them."""
    from .orphans import describe, left_behind

    try:
        found = left_behind()
    except (HpcMagicsError, OSError):
        return  # the scheduler or the home is silent: nothing to offer now
    if found:
        print(describe(found, "%hpc_cancel {job_id}"), file=sys.stderr)
