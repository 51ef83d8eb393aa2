"""Paths a Slurm job would need but its compute nodes cannot see: the login host's own
``/tmp``, ``/var/tmp`` and ``/dev/shm``. Checked before submitting (the job folder, the
working directory, ``--stage``/``--stage-back``, files the cell names in quotes that exist
here), so the job does not fail after its wait in the queue. ``HPC_MAGICS_NODES_SHARE_TMP=1``
says the nodes share this host's ``/tmp`` (a one-host cluster, such as the test cluster).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from .kernel_world import LOGIN_ONLY, login_only_root

SHARED_TMP_VARIABLE = "HPC_MAGICS_NODES_SHARE_TMP"
SHARED = "your home or project folder"
_QUOTED = re.compile("|".join(rf"""(['"])({re.escape(root)}/[^'"\n]+)\1""" for root in LOGIN_ONLY))


def nodes_share_tmp(environ: Mapping[str, str]) -> bool:
    return environ.get(SHARED_TMP_VARIABLE, "").strip().lower() in {"1", "yes", "true"}


def refusals(*, jobs_root: str, cwd: str, stage: Sequence[str], stage_back: str | None,
             cell: str, environ: Mapping[str, str]) -> list[str]:
    """One line each: what a compute node of a site with per-host ``/tmp`` cannot reach."""
    if nodes_share_tmp(environ):
        return []
    found: list[str] = []
    named = [(f"the job folder {jobs_root}", jobs_root, "set HPC_MAGICS_JOBS_DIR (or the "
              f"jobs_dir setting) to a folder in {SHARED}"),
             (f"the working directory {cwd}", cwd, f"start the notebook (or os.chdir) in {SHARED}"),
             *((f"--stage {path}", path, f"copy it to {SHARED} and --stage it from there")
               for path in stage),
             (f"--stage-back {stage_back}", stage_back or "", f"give a folder in {SHARED}")]
    for what, path, fix in named:
        root = login_only_root(path)
        if root:
            found.append(f"{what} is under {root}, which compute nodes do not see: {fix}")
    # files under a login-only folder that the cell names in quotes and that exist here
    quoted = dict.fromkeys(next(g for g in m.groups()[1::2] if g) for m in _QUOTED.finditer(cell))
    for path in (path for path in quoted if os.path.exists(path)):
        root = login_only_root(path)
        found.append(f"the cell reads {path}, a file under {root} of this login host, which "
                     f"compute nodes do not see: copy it to {SHARED} (or --stage it from there "
                     f"to node-local storage) and use that path")
    return found
