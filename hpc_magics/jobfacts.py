"""What a job's nodes recorded about it in its folder (``core/node_facts.py``), read
back for the notebook: the memory peak for %hpc_efficiency, the limit for a job that
ran out of memory."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from .core.node_facts import (
    NodePeak,
    explaining_step_state,
    memory_limit_mb,
    node_peak,
    oom_message,
    read_records,
)

STEPS_TIMEOUT_S = 20


def node_records(folder: Path, job_id: str) -> list[dict[str, Any]]:
    texts = []
    for path in sorted(folder.glob(glob.escape(f"node-{job_id}") + ".*.json")):
        try:
            texts.append(path.read_text(errors="replace"))
        except OSError:
            continue
    return read_records(texts)


def recorded_peak(folder: Path, job_id: str) -> NodePeak | None:
    return node_peak(node_records(folder, job_id))


def oom_hint(folder: Any, job_id: str) -> str:
    """One line for a job the kernel ended for memory: its limit, and the flag."""
    request = folder.meta().get("request") or {}
    mem_mb = request.get("mem_mb")
    return oom_message(mem_mb if isinstance(mem_mb, (int, float)) else None,
                       memory_limit_mb(node_records(folder.path, job_id)))


def failed_because(job_id: str, state: str) -> str:
    """A FAILED job's state as its steps tell it (a step killed for memory): one sacct
    call, made once when the notebook reports the failure; the job's own state when
    accounting cannot say."""
    from .core.errors import HpcMagicsError
    from .scheduler import commands

    if state != "FAILED":
        return state
    try:
        steps = commands.run(["sacct", "-n", "-P", "-j", job_id, "-o", "JobID,State"],
                             timeout=STEPS_TIMEOUT_S)
    except HpcMagicsError:  # accounting busy or gone: the job's own state is still true
        return state
    return explaining_step_state(state, steps.stdout) if steps.ok else state
