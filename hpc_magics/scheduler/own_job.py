"""What the scheduler says about the Slurm job this process runs in (``SLURM_JOB_ID``):
its end time comes from ``SLURM_JOB_END_TIME`` when Slurm sets it (newer releases), else
from ``squeue -j`` or ``scontrol show job``. The server, the server client and a Slurm
kernel's walltime warnings on the node ask it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core.units import slurm_int
from . import commands
from .slurm_text import SCONTROL_SHOW_JOB, parse_scontrol_job, slurm_timestamp

TIMEOUT_S = 20.0
Runner = Callable[..., commands.CommandResult]


@dataclass(frozen=True)
class OwnJob:
    """The Slurm job the current process runs in."""

    job_id: str
    job_name: str | None = None
    partition: str | None = None
    nodes: int | None = None
    start_time: float | None = None  # epoch seconds
    end_time: float | None = None  # epoch seconds


def own_job_id(environ: Mapping[str, str] | None = None) -> str | None:
    """``SLURM_JOB_ID`` of this process's environment (never anything from a request)."""
    env = os.environ if environ is None else environ
    job_id = (env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or "").strip()
    return job_id if job_id.isdigit() else None


def own_job_from_environment(environ: Mapping[str, str] | None = None) -> OwnJob | None:
    """What the job's environment says of it (``None`` outside a job): the times only on
    releases that set ``SLURM_JOB_START_TIME``/``END_TIME`` (24.11 and later)."""
    env = os.environ if environ is None else environ
    job_id = own_job_id(env)
    if job_id is None:
        return None
    return OwnJob(
        job_id=job_id,
        job_name=env.get("SLURM_JOB_NAME") or None,
        partition=env.get("SLURM_JOB_PARTITION") or None,
        nodes=slurm_int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")),
        start_time=slurm_timestamp(env.get("SLURM_JOB_START_TIME", "")),
        end_time=slurm_timestamp(env.get("SLURM_JOB_END_TIME", "")),
    )


def told_everything(job: OwnJob) -> bool:
    """Nothing left to ask the scheduler about ``job``."""
    return None not in (job.job_name, job.partition, job.nodes, job.start_time, job.end_time)


def own_job(environ: Mapping[str, str] | None = None, *, runner: Runner = commands.run,
            timeout_s: float = TIMEOUT_S) -> OwnJob | None:
    """This process's Slurm job (``None`` outside one): the environment, then ``squeue -j``,
    then ``scontrol show job`` for what it lacks; what no one says stays ``None``."""
    job = own_job_from_environment(environ)
    if job is None or told_everything(job):
        return job
    job_id = job.job_id
    text = commands.output(["squeue", "-h", "-j", job_id, "-o", "%S|%e|%D|%P|%j"],
                           timeout=timeout_s, runner=runner) or ""
    line = (text.strip().splitlines() or [""])[0]
    if line.count("|") >= 4:
        start, end, nodes, partition, name = line.split("|", 4)
        job = _fill(job, start_time=slurm_timestamp(start), end_time=slurm_timestamp(end),
                    nodes=slurm_int(nodes), partition=partition.strip(), job_name=name.strip())
    if job.end_time is None:
        shown = commands.output([*SCONTROL_SHOW_JOB, job_id], timeout=timeout_s, runner=runner)
        if shown is not None:
            info = parse_scontrol_job(shown)
            job = _fill(job, start_time=slurm_timestamp(info.get("StartTime", "")),
                        end_time=slurm_timestamp(info.get("EndTime", "")),
                        nodes=slurm_int(info.get("NumNodes")),
                        partition=info.get("Partition"), job_name=info.get("JobName"))
    return job


def _fill(job: OwnJob, **found: Any) -> OwnJob:
    """Fill the fields the environment did not give (an empty answer fills none)."""
    return replace(job, **{key: value for key, value in found.items()
                           if getattr(job, key) is None and value not in (None, "")})
