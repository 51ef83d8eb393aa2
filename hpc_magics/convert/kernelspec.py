"""The kernel a whole-notebook job runs: the one the notebook names, checked before submitting.

A notebook saved with the ``myenv`` kernel runs on ``myenv``'s interpreter and environment on
the node too (nbclient starts it from its kernelspec: argv and env), not on the package's
own Python. The kernelspec must be installed where the node finds it (``~/.local/share/
jupyter/kernels`` on a shared home, or ``JUPYTER_PATH``) and its interpreter must not be
under the login host's ``/tmp``: both are refused in one line before anything is submitted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidRequest
from ..core.kernel_world import login_only_root
from ..core.login_paths import nodes_share_tmp

DEFAULT_KERNEL = "python3"


def notebook_kernel(notebook: Mapping[str, Any]) -> str:
    """The kernelspec name the notebook's metadata names (``python3`` when none)."""
    spec = notebook.get("metadata", {}).get("kernelspec") or {}
    return str(spec.get("name") or DEFAULT_KERNEL)


def checked_kernel(name: str, on_a_cluster: bool = True) -> str:
    """``name``, once its kernelspec is found here and (``on_a_cluster``) its interpreter is
    one a compute node sees."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise InvalidRequest(
            f"the notebook's kernel {name!r} is not installed here (`jupyter kernelspec list` "
            f"shows those that are): install it (python -m ipykernel install --user --name "
            f"{name}) or choose another kernel in the notebook") from None
    program = spec.argv[0] if spec.argv else ""
    root = login_only_root(program) if on_a_cluster and not nodes_share_tmp(os.environ) else None
    if root:
        raise InvalidRequest(f"the notebook's kernel {name!r} runs {program}, under {root}, "
                             "which compute nodes do not see: install that environment in your "
                             "home or project folder")
    return name
