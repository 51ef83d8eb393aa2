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
    from . import session as sessions

    try:
        session = sessions.get(name)
        on = f" on {session.host}" if session.host else ""
        print(f"[hpc_magics] session {name}: job {session.job_id}{on} runs this cell")
        session.run(cell, shell.user_ns)
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
    @argument("action", choices=["start", "stop", "list", "push", "pull"],
              help="start a session, stop it, list the sessions, or move names to/from it")
    @argument("name", nargs="?", help="the session's name")
    @argument("names", nargs="*", help="push/pull: the variables to move")
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
        there; ``%hpc_session push|pull NAME names…`` moves variables explicitly;
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
        if args.action in {"push", "pull"}:
            return self._move(args.action, args.name, args.names)
        if args.names:
            raise UsageError(f"%hpc_session {args.action} {args.name}: unexpected "
                             f"{' '.join(args.names)} (names go with push and pull only)")
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


    def _move(self, action: str, name: str, names: list[str]) -> None:
        from . import session as sessions

        if not names:
            raise UsageError(f"%hpc_session {action} {name} needs the names to move, "
                             f"e.g. %hpc_session {action} {name} model data")
        namespace: dict[str, Any] = self.shell.user_ns if self.shell is not None else {}
        try:
            session = sessions.get(name)
            if action == "push":
                moved = session.push(names, namespace)
            else:
                moved = session.pull(names, namespace)
        except HpcMagicsError as error:
            raise UsageError(str(error)) from None
        where = "into session" if action == "push" else "from session"
        print(f"[hpc_magics] {', '.join(moved) or 'nothing'} {where} {name}")
        left = [n for n in names if n not in moved]
        if left and action == "pull":
            print(f"[hpc_magics] not in session {name} (or not picklable, so kept there): "
                  f"{', '.join(left)}", file=sys.stderr)


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
