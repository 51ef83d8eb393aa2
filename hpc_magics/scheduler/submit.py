"""The one submission door: every sbatch of hpc_magics (a cell, a sweep's array, a whole
notebook, a Slurm kernel) goes through here, with the script
``core/jobscript.render`` made.

It writes the script where the job keeps it, refuses a job for another cluster, applies the
one precedence (docs/slurm-environment.md, "Which value wins": the script's ``#SBATCH``
lines over the user's ``SBATCH_*`` defaults over the profile), and reads ``--parsable``'s
``ID`` or ``ID;CLUSTER``. Blocking: callers on an event loop call it in a thread.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core import directives, validation
from ..core.errors import SubmissionError
from ..core.jobids import parse_job_id
from ..core.slurm_environment import for_sbatch
from . import commands

SBATCH_TIMEOUT_S = 60.0
# How a job is submitted (its options are the script's #SBATCH lines); the answer is "ID"
# or "ID;CLUSTER" (parse_answer). scripts/record-slurm-output submits alike.
SBATCH_SUBMIT = ("sbatch", "--parsable")


@dataclass(frozen=True)
class Submitted:
    job_id: str
    cluster: str | None  # the cluster sbatch named in its answer (only with -M)


def other_cluster(pairs: Iterable[tuple[str, str]],
                  environ: Mapping[str, str] | None = None) -> list[validation.Problem]:
    """An error when the directives ``pairs`` (or, where they set none, ``SBATCH_CLUSTERS``
    or ``SLURM_CLUSTERS``) send the job to another cluster: nothing later (squeue, sacct,
    scancel) would follow it there yet. Asks this cluster's name (once a process)."""
    from .cluster import cluster_name

    return validation.not_yet(pairs, os.environ if environ is None else environ,
                              cluster_name())


def refusal(result: commands.CommandResult) -> str:
    """sbatch's reason in one line."""
    for line in (result.stderr + "\n" + result.stdout).splitlines():
        if line.strip().startswith("sbatch: error:"):
            return line.strip().removeprefix("sbatch: error:").strip()
    return result.first_error_line()


def parse_answer(output: str) -> Submitted:
    """Job id and cluster of ``sbatch --parsable``'s answer (``123``, ``123;lab``): its
    last non-empty line (warnings come before it)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    job_id, _, cluster = (lines[-1] if lines else "").partition(";")
    if parse_job_id(job_id) is None:
        raise SubmissionError(f"sbatch answered {output.strip()!r}, not a job id: the job may "
                              "have been submitted, check squeue before submitting again")
    return Submitted(job_id, cluster.strip() or None)


def submit(script: str, path: Path, environ: Mapping[str, str] | None = None, *,
           cluster_checked: bool = False) -> Submitted:
    """Write ``script`` to ``path`` (the job's record of what ran) and sbatch it.
    ``cluster_checked``: the caller refused :func:`other_cluster` on the same request
    before it made anything (a backend's preflight, ``KernelRequest.check``): not twice."""
    if not cluster_checked:
        validation.refuse(other_cluster(directives.parse(script).extra, environ))
    path.write_text(script, encoding="utf-8")
    # the user's SBATCH_* defaults, but none the script's own lines set (they would win)
    result = commands.run([*SBATCH_SUBMIT, str(path)], timeout=SBATCH_TIMEOUT_S,
                          environ=for_sbatch(os.environ if environ is None else environ, script))
    if not result.ok:
        raise SubmissionError(f"the scheduler refused the job: {refusal(result)}")
    return parse_answer(result.stdout)


def check_only(script: str) -> commands.CommandResult:
    """``sbatch --test-only`` on ``script`` (in a private temporary file): submits nothing;
    the same precedence as a submission."""
    handle, name = tempfile.mkstemp(suffix=".sh")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(script)
        return commands.run(["sbatch", "--test-only", name], timeout=30,
                            environ=for_sbatch(os.environ, script))
    finally:
        Path(name).unlink(missing_ok=True)


def release() -> str:
    """The Slurm release this door submits to, as ``sbatch --version`` names it
    (``slurm 24.11.5``; Debian's ``slurm-wlm 22.05.8``), or why it would not say."""
    result = commands.run(["sbatch", "--version"], timeout=15)
    return result.stdout.strip() if result.ok else result.first_error_line()
