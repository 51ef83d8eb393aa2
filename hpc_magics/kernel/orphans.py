"""Kernel jobs left behind: still in squeue, but the process that started them is gone.

A killed Jupyter server cannot cancel the Slurm kernel jobs it started; they would run,
and cost, until their time limit. Each kernel job folder records its owner (host, pid and
start time: ``scheduler/processes.py``); those whose owner is gone are *offered* for
cancel, never cancelled without the user's word.

Cheap enough for ``%load_ext``: folders known to be over are skipped by name
(``OVER_LIST``), the owners are looked at first (no scheduler query, no heavy import when
every owner lives), then one squeue for all candidates.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError

KERNELS_DIR_ENV = "HPC_MAGICS_KERNELS_DIR"
META_FILE = "meta.json"  # as jobfolder.folder names it; not imported: %load_ext stays light
QUEUE_TIMEOUT_S = 10
OVER = {"CANCELLED", "COMPLETED", "FAILED", "TIMEOUT", "ENDED"}


def kernels_root() -> Path:
    """Where kernel job folders go: on the home, which the compute nodes share."""
    chosen = os.environ.get(KERNELS_DIR_ENV, "").strip()
    return Path(chosen).expanduser() if chosen else Path.home() / ".hpc_magics" / "kernels"


def owner(pid: int | None = None, role: str = "owner") -> dict[str, Any]:
    """What a kernel job folder records about a process: the one that starts the kernel
    (this one), or (``role="tunnel"``) its SSH tunnel's ssh."""
    from ..scheduler import processes  # here: %load_ext imports no scheduler module

    pid = os.getpid() if pid is None else pid
    return {f"{role}_pid": pid, f"{role}_host": socket.gethostname(),
            f"{role}_started": processes.started(pid)}


def owner_gone(meta: dict[str, Any]) -> bool:
    """The recorded owner ran on this host and is gone (another host's: never called gone)."""
    pid = meta.get("owner_pid")
    if not isinstance(pid, int) or meta.get("owner_host") != socket.gethostname():
        return False
    from ..scheduler import processes

    return not processes.alive(pid, meta.get("owner_started"))


def end_tunnel(meta: dict[str, Any]) -> bool:
    """End the ssh a killed server left forwarding the kernel's ports: only that very
    process, on this host, once its owner is gone. Whether one was ended."""
    if not owner_gone(meta) or meta.get("tunnel_host") != socket.gethostname():
        return False
    from ..scheduler import processes

    # ssh leads its own group (commands.start)
    return processes.signal_group(meta.get("tunnel_pid"), meta.get("tunnel_started"))


@dataclass(frozen=True)
class LeftBehind:
    job_id: str
    step_id: str
    name: str
    folder: Path
    allocation: bool  # a step of the user's own allocation: only the step is the kernel's
    tunnel: bool = False  # reached through an SSH tunnel, which ended with its owner

    @property
    def target(self) -> str:
        """What scancel acts on: never the user's allocation, only the kernel's step."""
        from ..node.kernel import scancel_target  # here: %load_ext reads this module

        target = scancel_target(self.job_id, self.step_id, self.allocation)
        assert target is not None  # a step never started is not listed (``left_behind``)
        return target


def candidates(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """This user's kernel job folders, not known to be over, whose owner is gone (a folder
    found over is named in ``OVER_LIST`` and never read again)."""
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    known_over = _known_over(root)
    newly_over = []
    for entry in entries:
        if entry.name in known_over or entry.name == OVER_LIST:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or \
                    entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            meta = json.loads((Path(entry.path) / META_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict):
            continue
        if meta.get("state") in OVER:  # final: it never runs again
            newly_over.append(entry.name)
        elif meta.get("kind") == "kernel" and meta.get("job_id") and owner_gone(meta):
            found.append((Path(entry.path), meta))
    _note_over(root, newly_over)
    return found


# In the kernels root: the names of the folders found over, one a line (one small O_APPEND
# write each: lines never mix). A line lost or garbled only means that folder is read again.
OVER_LIST = ".over"


def _known_over(root: Path) -> set[str]:
    try:
        handle = os.open(root / OVER_LIST, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return set()
    with os.fdopen(handle, "rb") as stream:
        if os.fstat(stream.fileno()).st_uid != os.getuid():
            return set()
        return set(stream.read().decode(errors="replace").split("\n"))


def _note_over(root: Path, names: list[str]) -> None:
    if not names:
        return
    try:
        handle = os.open(root / OVER_LIST, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                         | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return  # read again next time
    try:
        if os.fstat(handle).st_uid == os.getuid():
            os.write(handle, "".join(f"{name}\n" for name in names).encode())
    except OSError:
        pass
    finally:
        os.close(handle)


def queued_ids(steps: bool) -> set[str]:
    """The ids of the user's jobs in squeue (and JOB.STEP ids with ``steps``), asked briefly."""
    from ..core.users import login_name
    from ..scheduler import commands

    found: set[str] = set()
    queries: list[list[str]] = [[], ["-s"]] if steps else [[]]
    for extra in queries:
        answer = commands.run(["squeue", "-h", *extra, "-u", login_name(), "-o", "%i"],
                              timeout=QUEUE_TIMEOUT_S)
        if not answer.ok:  # never "not in squeue" for an unanswered squeue
            raise HpcMagicsError(f"squeue failed: {answer.first_error_line()}")
        found.update(line.strip() for line in answer.stdout.splitlines() if line.strip())
    return found


# scancel's words for a job or step already over (a kernel that shut itself down took its
# job along): nothing left to cancel, no error
ALREADY_GONE = ("already completing or completed", "Invalid job id")


def scancel(target: str, signal: str | None = None, timeout_s: float = 30) -> str | None:
    """Cancel (or signal) a job or a step ``JOB.STEP``, exactly that (``scancel`` answers at
    once); why it failed, or None (also when it was over already)."""
    argv = ["scancel", *([f"--signal={signal}"] if signal else []), target]
    from ..scheduler import commands

    answer = commands.run(argv, timeout=timeout_s)
    if answer.ok or any(gone in answer.stderr for gone in ALREADY_GONE):
        return None
    return answer.first_error_line()


def left_behind() -> list[LeftBehind]:
    found = candidates(kernels_root())
    if not found:
        return []
    from ..jobfolder.folder import JobFolder

    queued = queued_ids(steps=any(meta.get("allocation") for _, meta in found))
    result = []
    for path, meta in found:
        entry = LeftBehind(str(meta["job_id"]), str(meta.get("step_id") or ""),
                           str(meta.get("name", "")), path, bool(meta.get("allocation")),
                           meta.get("tunnel") == "ssh")
        if entry.allocation and not entry.step_id:
            continue  # the step never started: nothing of the kernel's runs
        if entry.target in queued:
            result.append(entry)
        else:  # ended meanwhile: not looked at again
            JobFolder(path).update_meta(state="ENDED", state_source="owner gone, not in squeue")
    return result


def describe(found: Iterable[LeftBehind], cancel: str) -> str:
    """The lines offering them for cancel; ``cancel`` is the command, ``{job_id}`` in it."""
    lines = ["[hpc_magics] kernel jobs left behind by a Jupyter server or notebook that "
             "ended (they run, and cost, until their time limit):"]
    for entry in found:
        command = cancel.format(job_id=entry.job_id) if not entry.allocation else \
            "hpc-magics kernel cleanup"  # a step: %hpc_cancel would end the allocation
        # a server restart does not take its kernels over: the user may reach it again
        again = "its SSH tunnel ended with the server; " if entry.tunnel else ""
        lines.append(f"  kernel job {entry.target} ({entry.name}): cancel with "
                     f"{command}, or {again}reconnect with hpc-magics kernel connect "
                     f"{entry.job_id}")
    return "\n".join(lines)


def cancel(found: Iterable[LeftBehind], why: str = "hpc-magics kernel cleanup") -> list[str]:
    """scancel each, its job or only its step (the user asked for it, or the server that
    started them stops); returns the lines to print."""
    from ..jobfolder.folder import JobFolder

    said = []
    for entry in found:
        if end_tunnel(JobFolder(entry.folder).meta()):
            said.append(f"closed the SSH tunnel its server left to kernel job "
                        f"{entry.target}")
        failed = scancel(entry.target)
        if failed:
            said.append(f"scancel {entry.target} failed: {failed}")
            continue
        JobFolder(entry.folder).update_meta(state="CANCELLED", state_source=why)
        if entry.allocation:
            said.append(f"ended kernel step {entry.target}; your allocation {entry.job_id} "
                        "left running")
        else:
            said.append(f"cancelled kernel job {entry.target} ({entry.name})")
    return said


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def offer_left_behind(cancel: str = "%hpc_cancel {job_id}",
                      say: Callable[[str], None] = _to_stderr) -> None:
    """Say which kernel jobs of this user outlived their starter, offering them for cancel
    with ``cancel`` (``describe``): at ``%load_ext`` (on stderr), in ``hpc-magics kernel
    list``, in the log of a restarted server."""
    try:
        found = left_behind()
    except (HpcMagicsError, OSError):
        return  # the scheduler or the home is silent: nothing to offer now
    if found:
        say(describe(found, cancel))
