"""The product's scheduler calls, by kind: scripts/record-slurm-output records through these
and the parser tests replay the recordings through the same ones, so a recording is what
the product itself asks, and a product that asks differently no longer matches it.

Each call takes a ``runner`` (``commands.run``'s signature): it is installed as
``hpc_magics.scheduler.commands.run`` for the call and also passed where the product takes
one. The call returns what the product made of the answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hpc_magics.core import sweep
from hpc_magics.scheduler import commands, limits, live
from hpc_magics.scheduler.accounting import job_segments, recent_jobs, sacct_usage
from hpc_magics.scheduler.cluster import config_text
from hpc_magics.scheduler.own_job import own_job
from hpc_magics.scheduler.queue import JobQueue
from hpc_magics.scheduler.slurm_text import SCONTROL_SHOW_JOB, parse_scontrol_job, scontrol_fields

Runner = Callable[..., commands.CommandResult]


@contextlib.contextmanager
def installed(runner: Runner) -> Iterator[None]:
    """``runner`` answers every ``commands.run`` of the product meanwhile; the per-session
    answers of live checks and limits are forgotten before and after."""
    original = commands.run
    commands.run = runner
    limits.forget()
    try:
        yield
    finally:
        commands.run = original
        limits.forget()


def _queue(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    return JobQueue(user=args["user"], cluster=args["cluster"], cache_dir=scratch,
                    runner=runner).view(max_age_s=0)


def _scontrol_job(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    answer = runner([*SCONTROL_SHOW_JOB, args["job_id"]], timeout=20)
    return [scontrol_fields(line) for line in answer.stdout.splitlines() if line.strip()], \
        parse_scontrol_job(answer.stdout)


def _config(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    text = config_text()  # the product's own call (cluster.py), once a process
    # the product's three readers of it (cluster.py, limits.py through core/sweep.py)
    return (sweep.config_value(text, "ClusterName"), sweep.max_array_size(text),
            sweep.limits_enforced(text))


def _sbatch(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    from hpc_magics.scheduler.submit import SBATCH_SUBMIT, parse_answer

    answer = runner([*SBATCH_SUBMIT, args["script"]], timeout=60)
    parsed = parse_answer(answer.stdout)
    return parsed.job_id, (parsed.job_id, parsed.cluster)


def _sbatch_refused(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    from hpc_magics.scheduler.submit import SBATCH_SUBMIT, refusal

    return refusal(runner([*SBATCH_SUBMIT, args["script"]], timeout=60))


def _nodes(runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    # the product asks for no node records; its one-line reader is checked on them
    answer = runner(["scontrol", "show", "node", "-o"], timeout=20)
    return [scontrol_fields(line) for line in answer.stdout.splitlines() if line.strip()]


CALLS: dict[str, Callable[[Runner, dict[str, Any], Path], Any]] = {
    "queue": _queue,
    "own_job": lambda runner, args, scratch: own_job({"SLURM_JOB_ID": args["job_id"]},
                                                     runner=runner),
    "scontrol_job": _scontrol_job,
    "usage": lambda runner, args, scratch: sacct_usage(args["job_ids"], runner),
    "recent": lambda runner, args, scratch: recent_jobs(args["user"], runner),
    "segments": lambda runner, args, scratch: job_segments(args["job_id"]),
    "scontrol_partitions": lambda runner, args, scratch: live.partitions(),
    "node_groups": lambda runner, args, scratch: {
        group.partition: live.gpu_types(group.partition) for group in live.node_groups()},
    "associations": lambda runner, args, scratch: live.associations(args["user"]),
    "submit_limit": lambda runner, args, scratch: limits.association_limits(args["user"],
                                                                            None),
    "config": _config,
    "test_only": lambda runner, args, scratch: live.test_only(args["script"]),
    "sbatch": _sbatch,
    "sbatch_refused": _sbatch_refused,
    "nodes": _nodes,
}


def call(kind: str, runner: Runner, args: dict[str, Any], scratch: Path) -> Any:
    """What the product makes of ``kind``'s commands, answered by ``runner``."""
    with installed(runner):
        return CALLS[kind](runner, args, scratch)
