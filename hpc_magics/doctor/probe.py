"""The doctor's one job: a file written here seen on a node, the kernel's Python started
there, and (``listen``) a port opened there reached from here.

The job is a cell's job cut to its bones: the same renderer, the same interpreter and
software world (``SlurmBackend.kernel_world``: HPC_MAGICS_PYTHON, the profile's
``[environment]``, modules, uenv, image), the same door (``scheduler/submit.py``), waited
for through the watcher. Its folder is a hidden one in the jobs folder (``.doctor-*``, no
``meta.json``: ``%hpc_jobs`` does not list it), removed when everything held and kept, for
its logs, when something did not.
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.jobscript import JobParts, render
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..jobfolder.files import read_json, write_atomically
from ..jobfolder.folder import ensure_jobs_root
from ..node.doctor_probe import ANSWER_FILE

TOKEN_FILE, SEEN_FILE = "token", "token.seen"
JOB_NAME = "hpc-magics-doctor"
POLL_S = 0.5
FILES_LAG_S = 10.0  # after the job ended: its files may reach this host a moment later
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProbeResult:
    problem: str = ""  # why nothing could be learnt (not run, refused, still queued)
    refused: bool = False  # sbatch refused it: an error, where the others are warnings
    job_id: str = ""
    folder: Path | None = None
    state: str = ""  # the job's last state, as the watcher decided it
    seen: bool = False  # the node read the token written here, and this host its copy
    seen_on: str = ""  # the node that wrote the copy
    answer: dict[str, Any] | None = None  # answer.json: the node's Python and imports
    error_line: str = ""  # the first line of the job's stderr
    reached: str | None = None  # the kernel port: None not tried, "" reached, else why not

    @property
    def skipped(self) -> str:
        """What the lines that read the job say when there is nothing to read."""
        if self.problem.startswith("not checked"):
            return self.problem
        return "not checked: the test job gave no answer (see the line on the nodes)"

    @property
    def node(self) -> str:
        answer = self.answer or {}
        return str(answer.get("node") or answer.get("host") or self.seen_on)


def _script(folder: Path, request: ResourceRequest, profile: ClusterProfile,
            listen: bool) -> str:
    from ..backends.submitit_backend import SlurmBackend

    world = SlurmBackend().kernel_world(request, profile)
    taken = {flag for flag, _ in (*request.extra, *profile.extra_directives)}
    request = request.changed(extra=(*request.extra, *(
        pair for pair in world.directives if pair[0] not in taken)))
    literal = str(folder).replace("%", "%%")  # sbatch expands %j, %x, ... in file names
    quoted = shlex.quote(str(folder))
    probe = f"{world.python} -m hpc_magics.node.doctor_probe {quoted}"
    return render(request, profile, JobParts(
        job_name=JOB_NAME,
        engine=(("output", f"{literal}/%j.out"), ("error", f"{literal}/%j.err")),
        notes=("hpc-magics doctor: does the node see this folder, and run this Python?",),
        prologue=("umask 077", *world.lines),
        # the node's name beside the token: said even when the Python below fails
        run=(f'echo "$(cat {quoted}/{TOKEN_FILE}) ${{SLURMD_NODENAME:-$(hostname)}}" > '
             f"{quoted}/{SEEN_FILE}",
             probe + (" --listen" if listen else ""))))


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _answer(folder: Path) -> dict[str, Any] | None:
    found = read_json(folder / ANSWER_FILE)
    return found if isinstance(found, dict) else None


def _reach(answer: dict[str, Any]) -> str:
    address = (str(answer.get("address", "")), int(answer.get("port", 0)))
    try:
        with socket.create_connection(address, timeout=CONNECT_TIMEOUT_S):
            return ""
    except OSError as error:
        return f"{address[0]}:{address[1]}: {error.strerror or error}"


def _waiting(job_id: str) -> str:
    """Why the test job waits and when Slurm expects it to start, from the queue's one view
    (its ``%R`` and ``%S``: no second squeue)."""
    from ..core.jobs import plain_reason
    from ..scheduler.watcher import watcher

    job = watcher().queue.view().find(job_id)
    if job is None or job.phase != "pending":
        return ""
    when = "" if job.start_time is None else time.strftime(
        "; expected to start %Y-%m-%d %H:%M:%S", time.localtime(job.start_time))
    return f" (pending: {plain_reason(job.reason)}{when})"


def run(request: ResourceRequest, profile: ClusterProfile, jobs_root: Path, *,
        listen: bool, timeout_s: float, say: Callable[[str], None]) -> ProbeResult:
    """Submit the job, wait ``timeout_s`` at most for its answer, and read it."""
    from ..scheduler import submit
    from ..scheduler.watcher import watcher

    try:
        if not jobs_root.exists():
            ensure_jobs_root(jobs_root)  # as the first job would make it
        folder = Path(tempfile.mkdtemp(prefix=".doctor-", dir=jobs_root))  # 0700
    except (OSError, HpcMagicsError) as error:
        return ProbeResult(problem=f"no test job: its folder cannot be made in {jobs_root} "
                                   f"({getattr(error, 'strerror', None) or error})", refused=True)
    token = secrets.token_hex(8)
    write_atomically(folder / TOKEN_FILE, token)
    try:
        job_id = submit.submit(_script(folder, request, profile, listen),
                               folder / "doctor.sh").job_id
    except HpcMagicsError as error:
        return ProbeResult(problem=f"the test job was not submitted: {error} (give the "
                                   "account or partition your jobs use: -A, -p)",
                           refused=True, folder=folder)
    say(f"hpc-magics doctor: test job {job_id} submitted; waiting {timeout_s:.0f} s at most "
        "for it (--no-job skips it)")
    result = ProbeResult(job_id=job_id, folder=folder)
    deadline, ended_at = time.monotonic() + timeout_s, None
    while _answer(folder) is None:
        now = time.monotonic()
        if ended_at is None:
            state = watcher().poll_ids([(job_id, None)])[job_id]
            result = replace(result, state=state.state)
            if state.final:
                ended_at = now
        if now > deadline or (ended_at is not None and now - ended_at > FILES_LAG_S):
            break
        time.sleep(POLL_S)
    answer = _answer(folder)
    if answer is None and ended_at is None:
        why = _waiting(job_id) or f" ({result.state or 'not seen in the queue yet'})"
        with contextlib.suppress(HpcMagicsError, LookupError):
            watcher().cancel(job_id)
        return replace(result, problem=f"test job {job_id} gave no answer within "
                                       f"{timeout_s:.0f} s{why}: cancelled; try again "
                                       "(--timeout gives it longer)")
    errors = [line.strip() for line in _read(folder / f"{job_id}.err").splitlines()
              if line.strip()]
    copy, _, node = _read(folder / SEEN_FILE).strip().partition(" ")
    return replace(result, answer=answer, seen=copy == token, seen_on=node,
                   error_line=errors[-1] if errors else "",
                   reached=_reach(answer) if answer and "port" in answer else None)
