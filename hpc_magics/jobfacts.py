"""What a job's nodes recorded about it in its folder (``core/node_facts.py``), read
back for the notebook: the memory peak for %hpc_efficiency, the limit for a job that
ran out of memory, and the one line on why a job ended (``core/end_reasons.py``) that the
notebook's error, the job widget and %hpc_jobs share."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from .core.end_reasons import end_hint, end_note
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


def _memory(folder: Any, job_id: str) -> tuple[float | None, float | None]:
    """The --mem the job asked for and the limit its nodes recorded (MB), when known."""
    request = folder.meta().get("request") or {}
    mem_mb = request.get("mem_mb")
    return (mem_mb if isinstance(mem_mb, (int, float)) else None,
            memory_limit_mb(node_records(folder.path, job_id)))


def oom_hint(folder: Any, job_id: str) -> str:
    """One line for a job the kernel ended for memory: its limit, and the flag."""
    return oom_message(*_memory(folder, job_id))


def end_reason(folder: Any, job_id: str, state: str) -> str:
    """The one line for a job that ended ``state`` without results (handle.fetch)."""
    memory = _memory(folder, job_id) if state == "OUT_OF_MEMORY" else (None, None)
    return end_hint(state, *memory)


def end_line(folder: Any, job_id: str, state: str) -> str:
    """What the job widget and %hpc_jobs show beside a job that ended (``end_note``)."""
    memory = _memory(folder, job_id) if state == "OUT_OF_MEMORY" else (None, None)
    return end_note(state, *memory)


# a job's steps never change once it ended FAILED: each job is asked about once
_EXPLAINED: dict[str, str] = {}


def failed_because_all(job_ids: list[str]) -> dict[str, str]:
    """FAILED jobs' states as their steps tell it (a step killed for memory): one sacct
    call for all of them that were not asked about before; a job's own state (FAILED)
    when accounting cannot say, asked again next time."""
    from .core.errors import HpcMagicsError
    from .scheduler import commands

    asking = sorted({j for j in job_ids if j not in _EXPLAINED})
    if asking:
        try:
            steps = commands.run(["sacct", "-n", "-P", "-j", ",".join(asking),
                                  "-o", "JobID,State"], timeout=STEPS_TIMEOUT_S)
        except HpcMagicsError:  # accounting busy or gone: the job's own state is still true
            steps = None
        if steps is not None and steps.ok:
            for job_id in asking:
                own = [line for line in steps.stdout.splitlines()
                       if line.partition("|")[0].split(".")[0] == job_id]
                if own:
                    _EXPLAINED[job_id] = explaining_step_state("FAILED", "\n".join(own))
    return {j: _EXPLAINED.get(j, "FAILED") for j in job_ids}


def failed_because(job_id: str, state: str) -> str:
    """A FAILED job's state as its steps tell it (``failed_because_all``): asked once,
    when the notebook reports the failure."""
    if state != "FAILED":
        return state
    return failed_because_all([job_id])[job_id]
