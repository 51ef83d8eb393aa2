"""hpc_magics: run notebook cells as Slurm jobs and keep your server's allocation in view.

``%load_ext hpc_magics`` registers the magics. Importing this package is cheap: the
widget stack, nbconvert, tornado and submitit load on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    from .magics import register

    register(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unregister

    unregister(ipython)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """jupyter_server finds the extension here; the module loads tornado only when called."""
    return [{"module": "hpc_magics.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt labextension (built from labextension/ into hpc_magics/labextension)."""
    return [{"src": "labextension", "dest": "hpc-magics-labextension"}]
