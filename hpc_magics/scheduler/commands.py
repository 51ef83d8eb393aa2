"""The one narrow door through which hpc_magics runs Slurm commands (and starts processes).

Every call has a timeout, never goes through a shell, and runs without the variables a
surrounding Slurm job leaks to its children (``core/slurm_environment.LEAKED``): a Jupyter
server inside a job would otherwise hand its job's settings to the jobs it submits. The
user's settings for what commands print (``SLURM_TIME_FORMAT``, ...) reach sbatch and srun
but not the commands whose answers are parsed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import HpcMagicsError, SubmissionError
from ..core.slurm_environment import FORMATTING, STARTS_JOBS, leak_reason

DEFAULT_TIMEOUT_S = 30.0
# The server's credentials (JupyterHub puts its API token in the environment): sbatch
# exports the environment to the job, where they have no business.
SCRUBBED_NAMES = frozenset({"JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTER_TOKEN",
                            "JUPYTERHUB_OAUTH_ACCESS_TOKEN"})


def scrubbed_environment(environ: Mapping[str, str] | None = None, *,
                         reading: bool = False) -> dict[str, str]:
    """A copy of ``environ`` without variables a Slurm job leaks into its children, nor
    the server's credentials; ``reading`` (a command whose answer is parsed): nor the
    user's settings for what it prints (``SLURM_TIME_FORMAT``, ``SQUEUE_*``, ...)."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items()
            if leak_reason(k) is None and k not in SCRUBBED_NAMES
            and not (reading and leak_reason(k, FORMATTING))}


def slurm_available() -> bool:
    """``sbatch`` is on PATH: this machine can submit to a Slurm cluster."""
    return shutil.which("sbatch") is not None


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def first_error_line(self) -> str:
        lines = (line.strip() for line in (self.stderr or self.stdout).splitlines())
        return next(filter(None, lines), f"exit status {self.returncode}")


def not_found(command: str) -> str:
    """What ``run`` says of a Slurm command missing from PATH: a definite answer (no Slurm
    here), which no "try again" fixes."""
    return f"{command} was not found: is Slurm installed on this machine?"


def run(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S,
        environ: Mapping[str, str] | None = None) -> CommandResult:
    """Run a command; a missing command or a time-out becomes ``SubmissionError``."""
    args = tuple(str(a) for a in argv)
    try:
        completed = subprocess.run(  # noqa: S603 - argv list, no shell
            # errors="replace": a job name or reason in another encoding never breaks polling
            args, capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=timeout,
            env=scrubbed_environment(environ, reading=Path(args[0]).name not in STARTS_JOBS),
            check=False,
        )
    except FileNotFoundError:
        raise SubmissionError(not_found(args[0])) from None
    except subprocess.TimeoutExpired:
        raise SubmissionError(
            f"{args[0]} did not answer within {timeout:.0f}s: the scheduler may be busy, "
            "try again in a minute"
        ) from None
    return CommandResult(args, completed.returncode, completed.stdout, completed.stderr)


def output(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S,
           runner: Callable[..., CommandResult] | None = None) -> str | None:
    """The stdout of a command whose answer is read; ``None`` when it could not be asked
    or failed (callers say "unreachable", never "nothing")."""
    try:
        result = (runner or run)(argv, timeout=timeout)
    except HpcMagicsError:
        return None
    return result.stdout if result.ok else None


# A started job's process group gets this long between SIGTERM and SIGKILL on a cancel.
STOP_GRACE_S = 5.0


def start(argv: Sequence[str], *, log: Path, environ: Mapping[str, str] | None = None,
          ) -> subprocess.Popen[bytes]:
    """Start a long-running process (a local job's controller, which keeps its own time
    limit): its output into ``log``, in its own process group, so a cancel reaches all its
    children and the kernel's own signals do not."""
    args = [str(a) for a in argv]
    try:
        with open(log, "ab") as out:
            return subprocess.Popen(  # noqa: S603 - argv list, no shell
                args, env=scrubbed_environment(environ), stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        raise SubmissionError(f"{args[0]} was not found: cannot start the job") from None


def stop_group(process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the process's whole group now, SIGKILL after ``grace_s`` if it is still
    there; returns at once (a timer thread sends the second signal)."""
    def signal_group(number: int) -> None:
        # the group outlives its leader when a child lingers: signal it either way
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, number)

    signal_group(signal.SIGTERM)
    timer = threading.Timer(grace_s, signal_group, args=(signal.SIGKILL,))
    timer.daemon = True
    timer.start()
