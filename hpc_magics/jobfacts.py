"""What a job's nodes recorded about it in its folder (``core/node_records.py``), read
back for the notebook: the memory peak for %hpc_efficiency, the limit for a job that
ran out of memory (and the rerun it needs), and the one line on why a job ended
(``core/jobs.py``) that the notebook's error, the job widget and %hpc_jobs share."""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .core.efficiency import Usage, rerun_changes
from .core.errors import HpcMagicsError
from .core.jobs import end_hint, end_note, normalize_state
from .core.node_records import (
    STEP_STATES_THAT_EXPLAIN,
    NodePeak,
    explaining_step_state,
    memory_limit_mb,
    node_peak,
    read_records,
)
from .core.profiles import Partition, load_profile
from .core.resources import from_dict
from .core.validation import resolve_partition
from .jobfolder.files import read_tail

STEPS_TIMEOUT_S = 20


def node_files(folder: Path, kind: str, job_id: str, suffix: str,
               tail_bytes: int | None = None) -> list[tuple[str, str]]:
    """What each node wrote into the job folder (``KIND-JOBID.HOST.SUFFIX``) as (host,
    text), host "" for a file that names none; ``tail_bytes``: only the end of each file
    (the live widget, while the job writes them)."""
    found = []
    for path in sorted(folder.glob(glob.escape(f"{kind}-{job_id}") + f".*{suffix}")):
        try:
            text = (path.read_text(errors="replace") if tail_bytes is None
                    else "\n".join(read_tail(path, tail_bytes)))
        except OSError:
            continue
        found.append((path.name[len(f"{kind}-{job_id}."):-len(suffix)].rstrip("."), text))
    return found


def node_records(folder: Path, job_id: str) -> list[dict[str, Any]]:
    return read_records([text for _, text in node_files(folder, "node", job_id, ".json")])


def recorded_peak(folder: Path, job_id: str) -> NodePeak | None:
    return node_peak(node_records(folder, job_id))


def asked_memory(folder: Any, job_id: str) -> tuple[float | None, float | None]:
    """The --mem the job asked for and the limit its nodes recorded (MB), when known."""
    request = folder.meta().get("request") or {}
    mem_mb = request.get("mem_mb")
    return (mem_mb if isinstance(mem_mb, (int, float)) else None,
            memory_limit_mb(node_records(folder.path, job_id)))


def end_reason(folder: Any, job_id: str, state: str) -> str:
    """The one line for a job that ended ``state`` without results (handle.fetch)."""
    memory = asked_memory(folder, job_id) if state == "OUT_OF_MEMORY" else (None, None)
    return end_hint(_as_said(job_id, state), *memory)


def end_line(folder: Any, job_id: str, state: str) -> str:
    """What the job widget and %hpc_jobs show beside a job that ended (``end_note``); for
    a cell that raised, its error, as a local cell's traceback ends."""
    memory = asked_memory(folder, job_id) if state == "OUT_OF_MEMORY" else (None, None)
    return end_note(_as_said(job_id, state), *memory) or _raised(folder, state)


def _raised(folder: Any, state: str) -> str:
    """``the cell raised ZeroDivisionError: division by zero``, from the outcome file
    (read, never unpickled; its Fetch brings the whole traceback and %debug)."""
    if normalize_state(state) != "FAILED":
        return ""
    outcome = folder.outcome()
    if outcome is None or not outcome.failed or not outcome.error_type:
        return ""
    if folder.meta().get("kind") == "notebook" and outcome.error_message:
        return str(outcome.error_message)  # the runner's own: which cell failed, and where
    message = f": {outcome.error_message}" if outcome.error_message else ""
    return f"the cell raised {outcome.error_type}{message}"


def partition_ran_in(folder: Any) -> Partition | None:
    """The partition the job's request landed in, as its profile describes it (its node
    memory and time limit bound a rerun); None when the folder or profile cannot say."""
    meta = folder.meta()
    try:
        request = from_dict(meta.get("request") or {})
        return resolve_partition(request, load_profile(str(meta.get("profile") or "default")))
    except (HpcMagicsError, TypeError, ValueError):
        return None  # a profile since removed or renamed: no bound, as before profiles


def suggested_rerun(folder: Any, job_id: str, state: str,
                    usage: Usage | None = None) -> dict[str, str]:
    """The rerun the efficiency advice names for a job that ended ``state`` (``{"mem":
    "2G"}``; the widget's Rerun button): from accounting's figures when given,
    else from what the folder knows (the request, the limit its nodes recorded)."""
    if usage is None:
        asked, limit = asked_memory(folder, job_id)
        time_s = (folder.meta().get("request") or {}).get("time_s")
        usage = Usage(job_id, state, req_mem_mb=asked or limit,
                      time_limit_s=time_s if isinstance(time_s, (int, float)) else None)
    return rerun_changes(Usage.from_dict({**usage.to_dict(), "state": state}),
                         partition=partition_ran_in(folder))


# What accounting says of an ended job beyond its state: the step that ended a FAILED job
# (one killed for memory: OUT_OF_MEMORY), who cancelled a CANCELLED one ("CANCELLED by
# 1000"). It never changes: each job is asked about once.
ASKED_ABOUT = frozenset({"FAILED", "CANCELLED"})
_SAID: dict[str, str] = {}


def _told(job_id: str, own: list[str], state: str) -> str:
    if state == "FAILED":
        return explaining_step_state(state, "\n".join(own))
    job_line = next((line for line in own if line.partition("|")[0] == job_id), "")
    return job_line.partition("|")[2].strip() or state


def _as_said(job_id: str, state: str) -> str:
    """``state`` as accounting said it (who cancelled), when it was asked and agrees."""
    said = _SAID.get(job_id, "")
    return said if said and normalize_state(said) == state else state


def ended_because_all(ended: Mapping[str, str]) -> dict[str, str]:
    """Job id → its state, FAILED ones as their steps tell it (a step killed for memory):
    one sacct call for the FAILED and CANCELLED jobs not asked about before (who
    cancelled is kept for ``end_line``); a job's own state when accounting cannot say,
    asked again next time."""
    from .scheduler import commands

    asking = sorted(j for j, state in ended.items() if state in ASKED_ABOUT and j not in _SAID)
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
                told = _told(job_id, own, ended[job_id]) if own else ""
                if normalize_state(told) in {ended[job_id], *STEP_STATES_THAT_EXPLAIN}:
                    _SAID[job_id] = told  # not a line accounting has not caught up with
    return {j: normalize_state(_SAID.get(j, state)) for j, state in ended.items()}


def accounting_told(job_id: str) -> bool:
    """Whether ``ended_because_all`` has accounting's word on the job (else it asks again)."""
    return job_id in _SAID


def failed_because(job_id: str, state: str) -> str:
    """A FAILED job's state as its steps tell it (``ended_because_all``): asked once,
    when the notebook reports the failure (a CANCELLED one's, for who cancelled it)."""
    if state not in ASKED_ABOUT:
        return state
    return ended_because_all({job_id: state})[job_id]
