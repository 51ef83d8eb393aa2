"""The names and formats of a job's files, and the safe ways to read and write them.

Kernel and node alike read and write a job's files through here (and ``folder.py``):
results, output, figures, the requeue segment, checkpoints and gathered values.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import secrets
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import HpcMagicsError
from ..core.jobids import same_job
from ..core.users import user_name

if TYPE_CHECKING:  # the kernel's accounting figures: the node never loads their module
    from ..core.efficiency import Usage

RESULTS_FILE = "results.pkl"
OUTCOME_FILE = "outcome.json"  # beside the results: how the cell ended, read unpickling nothing
OUTPUT_FILE = "output.txt"
FIGURES_DIR = "figures"
CHECKPOINT_FILE = "checkpoint.pkl"
SEGMENT_FILE = "segment.json"
REQUEUED_AT = "requeued_at"  # key of SEGMENT_FILE: epoch seconds of the latest requeue
GATHER_DIR = "gathered"
USAGE_FILE = "usage.json"  # the job's accounting figures, once final: never asked again
MESSAGE_CHARS = 1000  # of an error's first line in outcome.json
POSTMORTEM_FILE = "postmortem.pkl"  # a failed cell's frames and their locals, for %debug


@dataclass(frozen=True)
class CellResult:
    """What the job sends back; stored as ``results.pkl`` in the job folder."""

    # the values and the last expression's value, ONE pickle of ``(values, last)``
    # (``stream.dump_results``): shipped objects the cell left unchanged are references
    state: bytes = field(default=b"", repr=False)
    names: tuple[str, ...] = ()  # the names in ``state``
    changed_in_place: tuple[str, ...] = ()  # shipped names the cell changed without assigning
    # shipped names the cell left unchanged, back by value all the same: what comes back
    # holds objects inside them (``sharing.come_back_together``)
    came_back_with: tuple[str, ...] = ()
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
    # a sweep task's values as short text (``reprlib``): the table the server writes into
    # a notebook nobody has open shows them, unpickling nothing
    shown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """How a cell ended (``outcome.json``, after its results): read unpickling nothing."""

    failed: bool
    error_type: str | None = None
    error_message: str | None = None  # its first line
    job_id: str = ""  # the attempt that wrote it: a sweep task's retry is another
    elapsed: float | None = None  # seconds the cell's side of the job took


@dataclass(frozen=True)
class NodeFrame:
    """One frame of a failed cell's traceback as it was on the node."""

    filename: str
    lineno: int
    name: str  # the function's (``<module>`` for the cell itself)
    firstlineno: int
    module: str | None  # its globals' ``__name__``
    in_cell: bool  # its globals are the cell's namespace (the cell or a function it defined)
    values: dict[str, Any]  # the locals that pickled
    not_pickled: dict[str, str]  # the others: name → type and why


@dataclass(frozen=True)
class NodeFailure:
    """A failed cell's frames, from the cell's own on, stored as ``postmortem.pkl``."""

    frames: tuple[NodeFrame, ...]
    error: BaseException | None  # the exception itself, when it pickles
    sources: dict[str, list[str]]  # pseudo-file name (the cell's) → its lines


def write_results(folder: Path, result: CellResult, job_id: str, elapsed: float) -> None:
    """``results.pkl``, then ``outcome.json``: the outcome there means the results are whole."""
    write_atomically(folder / RESULTS_FILE, pickle.dumps(result), durable=True)
    message = (result.error_message or "").strip().splitlines()[:1]
    outcome = Outcome(failed=result.error_type is not None, error_type=result.error_type,
                      error_message=message[0][:MESSAGE_CHARS] if message else None,
                      job_id=job_id, elapsed=elapsed)
    write_atomically(folder / OUTCOME_FILE, json.dumps(asdict(outcome)))


def read_json(path: Path) -> Any:
    """The JSON value in ``path``; ``None`` when it is absent, unreadable or damaged."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_outcome(folder: Path) -> Outcome | None:
    """The cell's outcome in ``folder``; ``None`` while it has none (or one unreadable)."""
    data = read_json(folder / OUTCOME_FILE)
    try:
        return Outcome(**data) if isinstance(data, dict) else None
    except TypeError:
        return None


def write_atomically(path: Path, data: bytes | str, durable: bool = False,
                     mode: int = 0o600) -> None:
    """Replace ``path`` whole: the one way the package writes a file others read.

    The bytes go to a temporary file beside it (an unpredictable name, created exclusively,
    never through a link, ``mode`` less the umask: private unless asked), renamed over
    ``path``: a reader sees the old file or the new one. ``durable``: the bytes reach the
    disk before the rename, for what only a job can make (results, checkpoints): a crash
    never leaves an empty file.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data.encode() if isinstance(data, str) else data)
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        move_into_place(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_tail(path: Path | str, max_bytes: int) -> list[str]:
    """The whole lines of the last ``max_bytes`` of a growing file (a log, samples), whatever
    its size. Raises ``OSError`` when it cannot be read."""
    with open(path, "rb") as stream:
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - max_bytes))
        lines = stream.read().decode(errors="replace").splitlines()
    return lines[1:] if size > max_bytes else lines  # the first line is cut


def move_into_place(source: Path | str, target: Path | str, dir_fd: int | None = None) -> None:
    """Rename ``source`` over ``target`` in one step (names relative to ``dir_fd`` if given)."""
    os.replace(source, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def read_segment(folder: Path) -> dict[str, Any]:
    """The job folder's ``segment.json`` (``{}`` when absent or unreadable)."""
    data = read_json(folder / SEGMENT_FILE)
    return data if isinstance(data, dict) else {}


def check_owned(path: Path) -> None:
    """Refuse a file or folder another user owns or may write (a folder's files could be
    swapped): its results would run their code when unpickled."""
    if (refusal := _refusal(path, path.stat())) is not None:
        raise HpcMagicsError(refusal)


def _refusal(path: Path, info: os.stat_result) -> str | None:
    if info.st_uid != os.getuid():
        return (f"{path} belongs to {user_name(info.st_uid)}, not {user_name(os.getuid())}: "
                "refusing to load it (unpickling runs its code)")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"{path} is writable by others: refusing to load it "
                f"(chmod go-w {path} if you trust it)")
    return None


def load_own(path: Path) -> Any:
    """Unpickle a file only if this user owns it and nobody else may write it: the one
    unpickler of files in the package (unpickling runs whatever code the file names).
    The open descriptor is checked: a file swapped in after a check is never loaded.
    Raises ``HpcMagicsError`` for a file not the user's alone, ``OSError`` for one that
    cannot be read, and what unpickling raises for a damaged one."""
    with path.open("rb") as stream:
        if (refusal := _refusal(path, os.fstat(stream.fileno()))) is not None:
            raise HpcMagicsError(refusal)
        return pickle.load(stream)  # checked: the user's own private file


def load_gathered(folder: Path, names: tuple[str, ...]) -> tuple[dict[str, list[Any]], int]:
    """Every rank's values of ``names`` (name → list by rank), and how many ranks wrote them."""
    by_rank: dict[int, dict[str, Any]] = {}
    world_size = 0
    for path in sorted((folder / GATHER_DIR).glob("rank-*.pkl")):
        data = load_own(path)
        by_rank[int(data["rank"])] = data["values"]
        world_size = max(world_size, int(data["world_size"]))
    world_size = max(world_size, max(by_rank, default=-1) + 1)
    gathered = {name: [by_rank.get(rank, {}).get(name) for rank in range(world_size)]
                for name in names}
    return gathered, len(by_rank)


def stored_usage(folder: Path, job_id: str | None) -> tuple[Usage, ...] | None:
    from ..core.efficiency import Usage

    try:
        usages = tuple(Usage.from_dict(u) for u in read_json(folder / USAGE_FILE))
    except (ValueError, TypeError):  # none yet (None is not iterable), or damaged
        return None
    if job_id is not None:
        usages = tuple(u for u in usages if same_job(job_id, u.job_id))
    return usages or None


def store_usage(folder: Path, usages: tuple[Usage, ...]) -> None:
    """Keep a job's final accounting figures (several kernels may store them at once)."""
    with contextlib.suppress(OSError):  # asked again next time
        write_atomically(folder / USAGE_FILE, json.dumps([u.to_dict() for u in usages], indent=1))
