"""Why a job is pending, in plain words: squeue's reason codes (squeue(1) "JOB REASON
CODES") as a table; an unknown code is shown as Slurm says it.
"""

from __future__ import annotations

import re

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
    if not code:
        return ""
    if code in PENDING_REASONS:
        return PENDING_REASONS[code]
    for pattern, text in _PATTERNS:
        if re.fullmatch(pattern, code):
            return text
    return code
