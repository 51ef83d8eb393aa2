"""The job model: Slurm's states, what they mean, and immutable job snapshots."""

from __future__ import annotations

from dataclasses import dataclass

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
               "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED", "SI": "SIGNALING", "SO": "STAGE_OUT"}


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
