"""The IPython layer: thin magics that parse, call the core, submit, and show."""

from __future__ import annotations

from typing import Any


def register(ipython: Any) -> None:
    from ..kernel.orphans import offer_left_behind
    from .doctor import DoctorMagics
    from .job_actions import JobActionMagics
    from .jobs import HpcMagicsKernel
    from .postmortem import catch_node_failures
    from .reattach import reattach_when_a_cell_runs
    from .server import ServerMagics

    # HpcMagicsKernel first: the others find it in the registry
    ipython.register_magics(HpcMagicsKernel, JobActionMagics, DoctorMagics, ServerMagics)
    catch_node_failures(ipython)  # %debug and %tb on a failed cell's node frames
    offer_left_behind()  # kernel jobs a killed server left: offered for cancel
    reattach_when_a_cell_runs(ipython)  # a restarted kernel takes up its running jobs
