"""The job model: Slurm's states and what they mean (why a job is pending, why it ended
without its results: one table each, which every view takes its words from); job snapshots.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .units import format_memory
from .users import user_name

# Slurm job states (squeue/sacct long names) → coarse phase.
# SPECIAL_EXIT is a requeue in held state ("job requeued in held state"), so it waits for a
# release like REQUEUE_HOLD; it is not an end.
# A SUSPENDED or STOPPED job keeps its nodes and goes on when resumed: started, not over.
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED"})
FAILED_STATES = frozenset({"FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                           "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED",
                           "INTERRUPTED"})
SUCCESS_STATES = frozenset({"COMPLETED", "FINISHED", "DONE"})
# Gone from the queue (two views after sbatch returned) and Slurm cannot say how:
# accounting is off or unreachable. Over, but neither a success nor a failure.
ENDED_STATES = frozenset({"ENDED"})
FINAL_STATES = FAILED_STATES | SUCCESS_STATES | ENDED_STATES

# squeue's compact codes (``%t``) → long names.
SHORT_CODES = {"PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CD": "COMPLETED",
               "CA": "CANCELLED", "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL",
               "PR": "PREEMPTED", "OOM": "OUT_OF_MEMORY", "S": "SUSPENDED", "ST": "STOPPED",
               "CF": "CONFIGURING", "RQ": "REQUEUED", "BF": "BOOT_FAIL", "DL": "DEADLINE",
               "RS": "RESIZING", "SE": "SPECIAL_EXIT", "RD": "RESV_DEL_HOLD",
               "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED", "SI": "SIGNALING", "SO": "STAGE_OUT",
               "RV": "REVOKED"}
# What a listing's state filter takes: squeue's --states (both forms, any case: the man
# page's JOB STATE CODES) and the states this tool shows of its own (a local job's, ENDED).
OWN_STATES = ("ENDED", "FINISHED", "INTERRUPTED", "UNKNOWN")
LISTED_STATES = frozenset(SHORT_CODES.values()) | FINAL_STATES | RUNNING_STATES | set(OWN_STATES)


def normalize_state(raw: str) -> str:
    """``CANCELLED by 0`` → ``CANCELLED``; ``TO`` → ``TIMEOUT``; unknown text upper-cased."""
    word = raw.strip().split(" ")[0].rstrip("+").upper()
    return SHORT_CODES.get(word, word) or "UNKNOWN"


def is_final(state: str) -> bool:
    return normalize_state(state) in FINAL_STATES


def phase(state: str) -> str:
    """One of ``pending``, ``running``, ``done``, ``failed``, ``ended`` (how is unknown)."""
    state = normalize_state(state)
    return next((name for name, states in (("done", SUCCESS_STATES), ("ended", ENDED_STATES),
                                           ("failed", FAILED_STATES), ("running", RUNNING_STATES))
                 if state in states), "pending")


@dataclass(frozen=True)
class JobSnapshot:
    """What is known about one job at one moment; views render these."""

    job_id: str
    state: str
    name: str = ""
    partition: str = ""
    nodes: str = ""
    elapsed_s: int | None = None
    time_limit_s: int | None = None
    end_time: float | None = None  # epoch seconds
    reason: str = ""
    submit_time: float | None = None  # epoch seconds, as Slurm recorded the submission
    backend: str = "slurm"
    folder: str = ""
    # running: when it started; pending: Slurm's estimate (``squeue %S``), when it has one
    start_time: float | None = None
    node_list: str = ""  # c[1-2]

    @property
    def phase(self) -> str:
        return phase(self.state)

    @property
    def final(self) -> bool:
        return is_final(self.state)


# ------------------------------------------------------------------ why it is pending
# reason code (as squeue prints it) → what it means for the user
PENDING_REASONS: dict[str, str] = {
    "Priority": "waiting for higher-priority jobs",
    "Resources": "waiting for free nodes: it is next in line",
    "None": "just submitted: the scheduler has not looked at it yet",
    "Dependency": "waiting for the jobs it depends on to finish",
    "DependencyNeverSatisfied": "its dependency can never be met: cancel it",
    "BeginTime": "waiting for its requested start time (--begin)",
    "JobHeldUser": "held by you: release it with scontrol release",
    "JobHeldAdmin": "held by an administrator",
    "ReqNodeNotAvail": "a node it needs is unavailable (down, drained or reserved)",
    "NodeDown": "a node it needs is down",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is not accepting jobs now",
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    "PartitionTimeLimit": "it asks for more time than its partition allows",
    "PartitionConfig": "it asks for something its partition does not offer",
    "Reservation": "waiting for its reservation to start",
    "InvalidAccount": "its account is not valid: check -A",
    "InvalidQOS": "its QOS is not valid: check -q",
    "QOSNotAllowed": "its QOS is not allowed for this account or partition",
    "AssocMaxJobsLimit": "you already run as many jobs as your account allows",
    "AssocGrpCpuLimit": "your group already uses its CPU quota",
    "AssocGrpGRES": "your group already uses its GPU quota",
    "AssocGrpGRESMinutes": "your group has used up its GPU time",
    "AssocGrpBillingMinutes": "your project has used up its allocation",
    "AssocGrpCPUMinutesLimit": "your group has used up its CPU time",
    "AssocGrpJobsLimit": "your group already runs as many jobs as it may",
    "AssocGrpNodeLimit": "your group already uses its node quota",
    "AssocMaxWallDurationPerJobLimit": "its time limit is above your account's maximum",
    "QOSMaxJobsPerUserLimit": "you already run as many jobs as your QOS allows",
    "QOSMaxSubmitJobPerUserLimit": "you already have as many jobs queued as your QOS allows",
    "QOSMaxGRESPerUser": "you already use your GPU quota",
    "QOSMaxCpuPerUserLimit": "you already use your CPU quota",
    "QOSMaxNodePerUserLimit": "you already use your node quota",
    "QOSMaxWallDurationPerJobLimit": "its time limit is above its QOS's maximum",
    "QOSGrpCpuLimit": "everyone in its QOS together uses the QOS's CPU quota",
    "QOSGrpGRES": "everyone in its QOS together uses the QOS's GPU quota",
    "QOSGrpNodeLimit": "everyone in its QOS together uses the QOS's node quota",
    "QOSJobLimit": "its QOS already runs as many jobs as it may",
    "QOSResourceLimit": "its QOS has reached a resource limit",
    "QOSTimeLimit": "its QOS has reached its time limit",
    "MaxMemPerLimit": "it asks for more memory per CPU than allowed",
    "BadConstraints": "its constraints (-C) match no node",
    "Licenses": "waiting for a license",
    "Cleaning": "the previous run is being cleaned up",
    "launch failed requeued held": "its launch failed: requeued and held, release it",
    "JobArrayTaskLimit": "the array's throttle (%N) limits how many run at once",
    "FrontEndDown": "no front-end node is available",
    "BurstBufferResources": "waiting for burst-buffer space",
    "SystemFailure": "the scheduler had a failure",
    "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_"
    "partitions": "its nodes are down, drained, or kept for higher-priority partitions",
}

# Families sbatch grows over releases (AssocGrpMemLimit, QOSMaxMemoryPerUser ...).
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"QOSMax\w*PerUser\w*", "you already use your quota under this QOS"),
    (r"QOSGrp\w*", "everyone in its QOS together uses the QOS's quota"),
    (r"AssocGrp\w*", "your group already uses its quota"),
    (r"AssocMax\w*", "it is above a limit of your account"),
)


def plain_reason(reason: str) -> str:
    """Slurm's pending reason (``Priority``, or ``(Priority)`` as in NODELIST) in plain
    words; unknown codes come back unchanged."""
    code = reason.strip().strip("()").strip()
    return PENDING_REASONS.get(code) or next(
        (text for pattern, text in _PATTERNS if re.fullmatch(pattern, code)), code)


# ------------------------------------------------------------------ why it ended
# state → what happened and what to do about it; OUT_OF_MEMORY names its limit (below)
HINTS = {
    "TIMEOUT": "it reached its time limit: ask for more with -t",
    "CANCELLED": "it was cancelled",
    "OUT_OF_MEMORY": ("the job ran out of memory: it was limited to {limit}{flag}; ask for "
                      "more with --mem"),
    "NODE_FAIL": "its node failed: submit it again",
    "PREEMPTED": "it was preempted: submit it again",
    "COMPLETED": ("Slurm says it COMPLETED, but its result file did not appear (a slow "
                  "network file system?): try %hpc_fetch again in a minute"),
    "ENDED": ("it left the queue without results, and without accounting Slurm does not "
              "say why (time limit, cancel, node failure): see the log"),
}
# states Slurm gives that end a job before its cell did (the cell's own error says more)
SLURM_ENDED_IT = frozenset(HINTS) - {"COMPLETED", "ENDED"}


def cancelled_by(said: str) -> str:
    """`` by you``, `` by alice`` or `` by uid 1234`` for sacct's ``CANCELLED by 1234``;
    "" for any other state."""
    words = said.split()
    if len(words) != 3 or words[1] != "by" or not words[2].isdigit():
        return ""
    uid = int(words[2])
    return " by you" if uid == os.getuid() else f" by {user_name(uid)}"


def end_hint(state: str, request_mem_mb: float | None = None,
             limit_mb: float | None = None) -> str:
    """The one line for a job that ended ``state`` (as sacct says it: ``CANCELLED by
    1000`` names who) without results; for OUT_OF_MEMORY, the memory it asked for and
    the limit its node enforced, when known."""
    said, state = state, normalize_state(state)
    if state != "OUT_OF_MEMORY":
        return HINTS.get(state, f"it ended {state}") + cancelled_by(said)
    flag = f" (--mem={format_memory(int(request_mem_mb))})" if request_mem_mb else ""
    if limit_mb:
        limit = f"{limit_mb:.0f}M"
    elif request_mem_mb:
        limit, flag = format_memory(int(request_mem_mb)), " (its --mem)"
    else:
        limit, flag = "the partition's default memory", ""
    return HINTS[state].format(limit=limit, flag=flag)


def end_note(state: str, request_mem_mb: float | None = None,
             limit_mb: float | None = None) -> str:
    """The line a view shows beside a job that ended: why, for a failure or an end Slurm
    cannot explain; "" for a success, a job still in the queue, or a plain FAILED (the
    cell's own error says why: ``jobfacts.end_line`` adds it from the outcome file)."""
    ended = phase(state) in {"failed", "ended"} and normalize_state(state) in HINTS
    return end_hint(state, request_mem_mb, limit_mb) if ended else ""
