"""A cell's job, once %%sbatch has checked it: its name, the cell that sent it (for its
meta.json), and what ``--dry-run`` prints instead of submitting: the script, and where each
of its values came from (the environment's sbatch defaults and the live/static choice:
``scheduler/cluster.py``)."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.sent_from import SentFrom, source_hash

if TYPE_CHECKING:
    from ..core.profiles import ClusterProfile
    from ..core.resources import ResourceRequest


def default_job_name(shell: Any) -> str:
    """``NOTEBOOK-N``: the notebook's name and the cell's execution count."""
    notebook = os.environ.get("JPY_SESSION_NAME", "")
    stem = Path(notebook).stem if notebook else "cell"
    count = getattr(shell, "execution_count", 0) if shell else 0
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{stem}-{count}")


def sent_from_meta(shell: Any) -> dict[str, Any]:
    """meta.json's ``sent_from``: the notebook cell that runs now, as the front end sent it:
    the notebook, the cell's id (JupyterLab and Notebook 7 send ``cellId`` with each
    execution), a hash of its source, and the id of this kernel (the server's name for it,
    from the connection file ``kernel-ID.json``). The server extension writes the job's
    outputs into that cell when nobody has the notebook open. {} outside a notebook's kernel."""
    parent = getattr(shell, "parent_header", None) or {}
    cell_id = (parent.get("metadata") or {}).get("cellId")
    code = (parent.get("content") or {}).get("code")
    notebook = os.environ.get("JPY_SESSION_NAME", "")
    if not cell_id or not isinstance(code, str) or not notebook:
        return {}
    kernel_id = ""
    with contextlib.suppress(ImportError, RuntimeError):
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
        if name.startswith("kernel-") and name.endswith(".json"):
            kernel_id = name[len("kernel-"):-len(".json")]
    return {"sent_from": SentFrom(notebook, str(cell_id), source_hash(code), kernel_id).to_meta()}


def print_dry_run(would_be: Path, script: str, backend: Any, payload: Any,
                  request: ResourceRequest, profile: ClusterProfile, *,
                  session_request: ResourceRequest, from_environment: Any,
                  live: bool) -> None:
    """The exact job script, where each value came from, and what would be shipped."""
    print(f"# dry run: nothing submitted. The job folder would be {would_be}"
          " (its time stamp and random part are set at submission).")
    print(script, end="")
    world = getattr(backend, "kernel_world", None)
    said = world(request, profile).said if world is not None else ()
    print(sources_text(request, session_request, from_environment, profile, script,
                       world=said), end="")
    if live and backend.name == "slurm":
        from ..scheduler.allocation import allocation_lines

        print("".join(f"# {line}\n" for line in allocation_lines(request, profile)), end="")
    print(f"# {payload.summary()}")


def sources_text(final: ResourceRequest, session: ResourceRequest, filled: Mapping[str, str],
                 profile: ClusterProfile, script: str, world: Sequence[str] = ()) -> str:
    """Comment lines: where each value of the script came from, and which variables reach
    sbatch (or give way to the script's own lines)."""
    from ..core import slurm_environment
    from ..core.flags import SBATCH_FLAGS

    lines = ["# where the values come from:"]
    for flag in SBATCH_FLAGS:
        value = getattr(final, flag.field)
        if value is None or value == ():
            continue
        source = (f"environment ({filled[flag.field]})" if flag.field in filled
                  else "%hpc_resources" if getattr(session, flag.field) == value else "cell")
        lines.append(f"#   --{flag.name}: {source}")
    lines += [f"#   --{name}: profile {profile.name}" for name, _ in profile.extra_directives]
    if profile.balance_command:  # a command the profile's file makes run as the user
        lines.append(f"#   allocation command: {shlex.join(profile.balance_command)} (profile "
                     f"{profile.name}: {profile.source})")
    given_way = slurm_environment.overridden(os.environ, script)
    kept = [n for n in slurm_environment.kept_names(os.environ) if n not in given_way]
    if kept:
        lines.append(f"# reach sbatch from the environment: {', '.join(kept)}")
    if given_way:
        lines.append(f"# give way to the script's own lines: {', '.join(given_way)}")
    lines += [f"# the kernel's world: {item}" for item in world]
    return "\n".join(lines) + "\n"
