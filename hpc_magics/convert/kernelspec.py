"""The kernel a whole-notebook job runs: the one the notebook names, checked before submitting.

A notebook saved with the ``myenv`` kernel runs on ``myenv``'s interpreter and environment on
the node too (nbclient starts it from its kernelspec: argv and env), not on the package's
own Python. The kernelspec must be installed where the node finds it (``~/.local/share/
jupyter/kernels`` on a shared home, or ``JUPYTER_PATH``) and its interpreter must not be
under the login host's ``/tmp``: both are refused in one line before anything is submitted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidRequest
from ..core.kernel_world import login_only_root, read
from ..core.login_paths import nodes_share_tmp
from ..core.notebook_world import NotebookKernel, kernel_of, notebook_parts


def notebook_kernel(notebook: Mapping[str, Any]) -> str:
    """The kernelspec name the notebook's metadata names (``python3`` when none)."""
    spec = notebook.get("metadata", {}).get("kernelspec") or {}
    return str(spec.get("name") or "python3")


def _spec(name: str) -> Any:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        return KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise InvalidRequest(
            f"the notebook's kernel {name!r} is not installed here (`jupyter kernelspec list` "
            f"shows those that are): install it (python -m ipykernel install --user --name "
            f"{name}) or choose another kernel in the notebook") from None


def kernel_world_of(notebook: Mapping[str, Any], here: Mapping[str, str],
                    on_a_cluster: bool = False) -> NotebookKernel:
    """The world of the kernel the notebook names (core/notebook_world.py): its kernelspec's
    argv and env, the notebook's ``hpc_magics.environment``; ``here``: this process's
    environment, for what the kernel shares with it (its module system, image, uenv).
    ``on_a_cluster``: its interpreter must be one a compute node sees."""
    name = notebook_kernel(notebook)
    spec = _spec(name)
    program = spec.argv[0] if spec.argv else ""
    root = login_only_root(program) if on_a_cluster and not nodes_share_tmp(here) else None
    if root:
        raise InvalidRequest(f"the notebook's kernel {name!r} runs {program}, under {root}, "
                             "which compute nodes do not see: install that environment in your "
                             "home or project folder")
    return kernel_of(name, list(spec.argv), dict(spec.env or {}), here,
                     notebook.get("metadata", {}))


def script_world(notebook: Mapping[str, Any], interpreter: str | None,
                 settings: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """For ``hpc-magics convert``: the run line's interpreter (``interpreter`` when given,
    else the notebook's kernel's, else ``python`` from the job's PATH) and the script's
    lines for that kernel's world (its modules and venv, never this process's)."""
    try:
        _spec(notebook_kernel(notebook))
    except InvalidRequest as missing:  # converting needs no kernel: say what the script runs
        return interpreter or "python", (f"# {missing}", "# so the script runs "
                                         f"`{interpreter or 'python'}` from the job's PATH")
    kernel = kernel_world_of(notebook, os.environ)
    own = kernel.argv[0] if kernel.argv and not kernel.starts_itself else "python"
    here = read(os.environ, sys.executable)
    made = notebook_parts(kernel, here, settings, clean=False, driver=interpreter or own,
                          role="given" if interpreter else "the kernel's")
    return interpreter or made.python, made.lines
