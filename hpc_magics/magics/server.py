"""``%hpc_server``: the Jupyter server's Slurm job and a Stop button, as a widget.

For Notebook 7 and classic notebook users, who have no JupyterLab status bar.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, parse_argstring

from .arguments import lazy_magic_arguments as magic_arguments


@magics_class
class ServerMagics(Magics):
    @magic_arguments()
    @argument("--text", action="store_true",
              help="print the information instead of showing the widget")
    @line_magic
    def hpc_server(self, line: str = "") -> Any:
        """Show this server's Slurm job (time left, node-hours) with a Stop button.

        Stop reaches the Jupyter server that runs this kernel (it saves nothing itself:
        save your notebooks first), shuts it down and cancels its own Slurm job only. In a
        Slurm kernel it ends that kernel only: its job, or its step in an
        allocation of yours (``--jobid``), which keeps running.
        """
        import time

        from ..server.client import ServerControl
        from ..widgets.server_view import server_view

        args = parse_argstring(self.hpc_server, line)
        control = ServerControl.discover()
        status = control.status()
        if args.text:
            view = server_view(status, time.time(), control.stop_target)
            print(view.headline)
            for key, value in view.rows:
                print(f"  {key}: {value}")
            if view.warning:
                print(view.warning)
            return None
        from IPython.display import display

        from ..widgets.server import ServerWidget

        widget = ServerWidget(status, stop_target=control.stop_target,
                              read_status=control.status, stop=control.stop,
                              read_jobs=control.jobs_from_this_server,
                              cancel_job=control.cancel_job)
        display(widget)
        return None
