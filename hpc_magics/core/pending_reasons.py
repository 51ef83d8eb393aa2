"""Why a job waits, in plain words: Slurm's pending reason codes (``squeue %r``).

A small table; an unknown code is shown as Slurm spells it. (A fuller table may replace
this one: keep it a dict from code to sentence.)
"""

from __future__ import annotations

PLAIN_REASONS: dict[str, str] = {
    "None": "just submitted: the scheduler has not looked at it yet",
    "Priority": "other jobs with a higher priority are ahead of it",
    "Resources": "it is next, waiting for the CPUs, memory or GPUs it asked for to free up",
    "BeginTime": "it was asked not to start before a given time (--begin)",
    "Dependency": "it waits for another job to finish (--dependency)",
    "DependencyNeverSatisfied": "the job it depends on failed: it will never start; cancel it",
    "JobHeldUser": "you put it on hold: `scontrol release ID` lets it start",
    "JobHeldAdmin": "an administrator put it on hold",
    "ReqNodeNotAvail": "a node it needs is down, drained or reserved",
    "PartitionTimeLimit": "its time limit is above the partition's: it will never start; "
                          "ask for less with -t",
    "PartitionNodeLimit": "it asks for more nodes than the partition allows",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is not accepting jobs now",
    "NodeDown": "a node it needs is down",
    "Reservation": "it waits for its reservation to start",
    "QOSMaxJobsPerUserLimit": "you already run as many jobs as your QOS allows",
    "QOSMaxCpuPerUserLimit": "your running jobs already use the CPUs your QOS allows",
    "QOSMaxGRESPerUser": "your running jobs already use the GPUs your QOS allows",
    "QOSGrpCpuLimit": "your group's jobs already use the CPUs its QOS allows",
    "QOSGrpGRES": "your group's jobs already use the GPUs its QOS allows",
    "AssocMaxJobsLimit": "your account already runs as many jobs as it may",
    "AssocGrpCPURunMinutesLimit": "your account has used up its running CPU-minutes for now",
    "AssocGrpBillingMinutes": "your account has used up its billing minutes",
    "InvalidAccount": "its account is not valid: cancel it and submit with a valid -A",
    "InvalidQOS": "its QOS is not valid: cancel it and submit with a valid -q",
    "launch failed requeued held": "its launch failed and Slurm held it: `scontrol release ID`",
}


def plain_reason(reason: str) -> str:
    """``Resources`` → "it is next, waiting for ..."; unknown codes come back as given."""
    code = reason.strip().strip("()")
    if not code:
        return ""
    return PLAIN_REASONS.get(code, code)
