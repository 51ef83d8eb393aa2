"""What Slurm's commands print, read: ``squeue``'s job lines, its durations and times,
and ``scontrol show … -o`` records. Pure text in, values out; a line that does not read
is skipped, never guessed at."""

from __future__ import annotations

import datetime as _dt
import re

from ..core.jobs import JobSnapshot, normalize_state
from ..core.units import slurm_seconds

# Fields separated by "|"; the job name goes last so a "|" inside it survives the split.
# %V: submit time, so a job id the controller reuses is never taken for an older job.
# %R: a pending job's reason, a running job's nodes. %S: the start, or for a pending job
# the scheduler's estimate (what `squeue --start` shows, so no second call is needed).
SQUEUE_FIELDS = ("%i", "%T", "%P", "%D", "%M", "%l", "%e", "%R", "%S", "%V", "%j")
SQUEUE_FORMAT = "|".join(SQUEUE_FIELDS)


def slurm_duration(text: str) -> int | None:
    """Whole seconds in squeue's ``[D-][H:]M:S`` spelling; ``None`` for UNLIMITED, N/A."""
    seconds = slurm_seconds(text)
    return None if seconds is None else int(seconds)


def slurm_timestamp(text: str) -> float | None:
    """Epoch seconds from Slurm's local ``YYYY-MM-DDTHH:MM:SS``, or an epoch number."""
    value = text.strip()
    if not value or value.upper() in {"N/A", "UNKNOWN", "NONE", "(NULL)", "0"}:
        return None
    if value.isdigit():
        return float(value)
    try:
        return _dt.datetime.fromisoformat(value).timestamp()  # naive = local, as Slurm prints
    except ValueError:
        return None


def parse_squeue(text: str) -> tuple[JobSnapshot, ...]:
    """Jobs from ``squeue -h -o SQUEUE_FORMAT`` output; malformed lines are skipped."""
    jobs = []
    for line in text.splitlines():
        parts = line.split("|", len(SQUEUE_FIELDS) - 1)
        if len(parts) != len(SQUEUE_FIELDS) or not parts[0].strip():
            continue
        job_id, state, partition, nodes, elapsed, limit, end, reason_or_nodes, start, submit, \
            name = parts
        state = normalize_state(state)
        reason_or_nodes = reason_or_nodes.strip()
        if reason_or_nodes in {"None", "(null)", "(None)"}:
            reason_or_nodes = ""
        # %R: "(reason)" for a job without nodes (pending, held, SPECIAL_EXIT), else its
        # nodes, whatever the state (a STOPPED or SUSPENDED job keeps its allocation)
        waiting = (reason_or_nodes.startswith("(") and reason_or_nodes.endswith(")")) \
            or state == "PENDING"
        jobs.append(JobSnapshot(
            job_id=job_id.strip(), state=state, name=name.strip(),
            partition=partition.strip(), nodes=nodes.strip(),
            elapsed_s=slurm_duration(elapsed), time_limit_s=slurm_duration(limit),
            end_time=slurm_timestamp(end),
            reason=reason_or_nodes.strip("()") if waiting else "",
            submit_time=slurm_timestamp(submit), start_time=slurm_timestamp(start),
            node_list="" if waiting else reason_or_nodes,
        ))
    return tuple(jobs)


# scontrol's keys: JobId, TRES, CPUs/Task, AllocNode:Sid, MCS_label, NtasksPerN:B:S:C
_SCONTROL_KEY = re.compile(r"^[A-Z][A-Za-z0-9_/:]*$")
# The job's one-line record, as the product asks for it (own_job, %hpc_jobs' log lookup).
SCONTROL_SHOW_JOB = ("scontrol", "show", "job", "-o")


def scontrol_fields(line: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol show … -o`` line. Values may hold spaces (a
    job name, ``--comment``, an output path, a node's ``Reason``): a word that does not
    start a ``Key=`` continues the value before it. The first of a repeated key wins."""
    pairs: dict[str, str] = {}
    key = None
    for word in line.split(" "):
        name, sep, value = word.partition("=")
        if sep and _SCONTROL_KEY.match(name):
            key = name if name not in pairs else None
            if key is not None:
                pairs[key] = value
        elif key is not None:
            pairs[key] += " " + word
    return {k: v.strip() for k, v in pairs.items()}


def parse_scontrol_job(text: str) -> dict[str, str]:
    """The fields of ``scontrol show job -o``: its first line (a heterogeneous job has one
    line per component; the first is the leader's)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return scontrol_fields(lines[0]) if lines else {}
