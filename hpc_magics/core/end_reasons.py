"""Why a job ended without its results, in one line with the fix: the one table the
notebook's error, the widget and ``%hpc_jobs`` take their words from.
"""

from __future__ import annotations

import os
import pwd

from .jobs import normalize_state, phase
from .node_records import oom_message

# state → what happened and what to do about it; OUT_OF_MEMORY names its limit (below)
HINTS = {
    "TIMEOUT": "it reached its time limit: ask for more with -t",
    "CANCELLED": "it was cancelled",
    "OUT_OF_MEMORY": "it ran out of memory: ask for more with --mem",
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
    if uid == os.getuid():
        return " by you"
    try:
        return f" by {pwd.getpwuid(uid).pw_name}"
    except KeyError:  # a user this host does not know
        return f" by uid {uid}"


def end_hint(state: str, request_mem_mb: float | None = None,
             limit_mb: float | None = None) -> str:
    """The one line for a job that ended ``state`` (as sacct says it: ``CANCELLED by
    1000`` names who) without results; for OUT_OF_MEMORY, the memory it asked for and
    the limit its node enforced, when known."""
    said, state = state, normalize_state(state)
    if state == "OUT_OF_MEMORY":
        return oom_message(request_mem_mb, limit_mb)
    return HINTS.get(state, f"it ended {state}") + cancelled_by(said)


def end_note(state: str, request_mem_mb: float | None = None,
             limit_mb: float | None = None) -> str:
    """The line a view shows beside a job that ended: why, for a failure or an end Slurm
    cannot explain; "" for a success, a job still in the queue, or a plain FAILED (its
    log and the notebook's error say what the cell raised)."""
    if phase(state) in {"failed", "ended"} and normalize_state(state) in HINTS:
        return end_hint(state, request_mem_mb, limit_mb)
    return ""
