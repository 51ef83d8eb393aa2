"""The IPython layer: thin magics that parse, call the core, submit, and show."""

from __future__ import annotations

from typing import Any


def register(ipython: Any) -> None:
    from .doctor import DoctorMagics
    from .job_actions import JobActionMagics
    from .jobs import HpcMagicsKernel
    from .server import ServerMagics

    ipython.register_magics(HpcMagicsKernel)  # first: the others find it in the registry
    ipython.register_magics(JobActionMagics)
    ipython.register_magics(DoctorMagics)
    from ..kernel.orphans import offer_left_behind
    from .postmortem import catch_node_failures

    catch_node_failures(ipython)  # %debug and %tb on a failed cell's node frames
    offer_left_behind()  # kernel jobs a killed server left: offered for cancel
    from .reattach import reattach_when_a_cell_runs

    reattach_when_a_cell_runs(ipython)  # a restarted kernel takes up its running jobs
    ipython.register_magics(ServerMagics)
