"""The names and formats of a job's files, and the safe ways to read and write them.

Kernel and node alike read and write a job's files through here (and ``folder.py``):
results, output, figures, the requeue segment, checkpoints and gathered values.
"""

from __future__ import annotations

import json
import os
import pickle
import pwd
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.efficiency import Usage
from ..core.errors import HpcMagicsError
from ..core.jobids import same_job

RESULTS_FILE = "results.pkl"
OUTPUT_FILE = "output.txt"
FIGURES_DIR = "figures"
CHECKPOINT_FILE = "checkpoint.pkl"
SEGMENT_FILE = "segment.json"
REQUEUED_AT = "requeued_at"  # key of SEGMENT_FILE: epoch seconds of the latest requeue
GATHER_DIR = "gathered"
USAGE_FILE = "usage.json"  # the job's accounting figures, once final: never asked again




@dataclass(frozen=True)
class CellResult:
    """What the job sends back; stored as ``results.pkl`` in the job folder."""

    # the values and the last expression's value, ONE pickle of ``(values, last)``
    # (``stream.dump_results``): shipped objects the cell left unchanged are references
    state: bytes = field(default=b"", repr=False)
    names: tuple[str, ...] = ()  # the names in ``state``
    changed_in_place: tuple[str, ...] = ()  # shipped names the cell changed without assigning
    referenced: tuple[str, ...] = ()  # unchanged shipped names ``state`` refers to
    notebook_ids: dict[str, int] = field(default_factory=dict)  # see Payload.notebook_ids
    modules: dict[str, str] = field(default_factory=dict)  # name → module to import
    has_last_value: bool = False
    last_value_repr: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # name → why it did not come back
    figures: tuple[str, ...] = ()
    error_type: str | None = None
    error_message: str | None = None
    remote_traceback: str | None = None
    hostname: str = ""


def write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def read_segment(folder: Path) -> dict[str, Any]:
    """The job folder's ``segment.json`` (``{}`` when absent or unreadable)."""
    try:
        data = json.loads((folder / SEGMENT_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_owned(path: Path) -> None:
    """Refuse files another user owns or may write: unpickling them runs their code."""
    info = path.stat()
    if info.st_uid != os.getuid():
        raise HpcMagicsError(
            f"{path} belongs to {user_name(info.st_uid)}, not {user_name(os.getuid())}: "
            "refusing to load it (unpickling runs its code)")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise HpcMagicsError(f"{path} is writable by others: refusing to load it "
                             f"(chmod go-w {path} if you trust it)")


def load_own(path: Path) -> Any:
    """Unpickle a file only if this user owns it and nobody else may write it."""
    check_owned(path)
    with path.open("rb") as stream:
        return pickle.load(stream)  # checked: the user's own private file


# --------------------------------------------------------------------- notebook side
def load_gathered(folder: Path, names: tuple[str, ...]) -> tuple[dict[str, list[Any]], int]:
    """Every rank's values of ``names``: name → list indexed by rank (None where a rank
    did not write one); and how many ranks wrote theirs."""
    files = sorted((folder / GATHER_DIR).glob("rank-*.pkl"))
    by_rank: dict[int, dict[str, Any]] = {}
    world_size = 0
    for path in files:
        data = load_own(path)
        by_rank[int(data["rank"])] = data["values"]
        world_size = max(world_size, int(data["world_size"]))
    world_size = max(world_size, max(by_rank, default=-1) + 1)
    gathered = {name: [by_rank.get(rank, {}).get(name) for rank in range(world_size)]
                for name in names}
    return gathered, len(by_rank)


def stored_usage(folder: Path, job_id: str | None) -> tuple[Usage, ...] | None:
    try:
        data = json.loads((folder / USAGE_FILE).read_text())
        usages = tuple(Usage.from_dict(u) for u in data)
    except (OSError, ValueError, TypeError):
        return None
    if job_id is not None:
        usages = tuple(u for u in usages if same_job(job_id, u.job_id))
    return usages or None


def store_usage(folder: Path, usages: tuple[Usage, ...]) -> None:
    """Keep a job's final accounting figures (a temporary file of its own, then renamed:
    several kernels may store them at once)."""
    try:
        write_atomically(folder / USAGE_FILE,
                         json.dumps([u.to_dict() for u in usages], indent=1).encode())
    except OSError:
        pass  # asked again next time
