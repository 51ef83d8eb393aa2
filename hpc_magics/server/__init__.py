"""The jupyter_server extension: the server's own Slurm job, stopping it, idle auto-stop.

Importing this package is cheap; tornado and jupyter_server load in ``handlers``.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from .handlers import load

    load(serverapp)
