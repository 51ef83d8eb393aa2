"""What ``GET /hpc-magics/server`` answers, as an immutable value built by a pure function.

Shared by the server extension and the ``%hpc_server`` widget; no tornado here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..scheduler.own_job import OwnJob

DEFAULT_WARN_MINUTES = (15, 5)


@dataclass(frozen=True)
class ServerStatus:
    in_slurm_job: bool
    now: float
    job_id: str | None = None
    job_name: str | None = None
    partition: str | None = None
    nodes: int | None = None
    start_time: float | None = None
    end_time: float | None = None
    seconds_left: int | None = None
    node_hours_used: float | None = None
    node_hours_total: float | None = None
    idle_stop_minutes: float | None = None
    idle_stop_at: float | None = None
    idle_warning_minutes: float | None = None
    warn_minutes: tuple[int, ...] = DEFAULT_WARN_MINUTES
    # the server answered before the scheduler did: what the job's environment says only
    pending: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # json.dumps writes the tuple as a list

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerStatus:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["warn_minutes"] = tuple(values.get("warn_minutes") or DEFAULT_WARN_MINUTES)
        return cls(**values)


def server_status(job: OwnJob | None, now: float, *, idle_stop_minutes: float | None = None,
                  idle_stop_at: float | None = None, idle_warning_minutes: float | None = None,
                  warn_minutes: tuple[int, ...] = DEFAULT_WARN_MINUTES,
                  pending: bool = False) -> ServerStatus:
    """The status of a server running in ``job`` (``None``: not in a Slurm job) at ``now``."""
    idle = ServerStatus(
        in_slurm_job=False, now=now, idle_stop_minutes=idle_stop_minutes or None,
        idle_stop_at=idle_stop_at if idle_stop_minutes else None,
        idle_warning_minutes=idle_warning_minutes if idle_stop_minutes else None,
        warn_minutes=tuple(warn_minutes), pending=pending)
    if job is None:
        return idle
    seconds_left = None if job.end_time is None else max(0, int(job.end_time - now))
    used = total = None
    if job.start_time is not None and job.nodes is not None:
        used = round(job.nodes * max(0.0, now - job.start_time) / 3600.0, 3)
        if job.end_time is not None:
            total = round(job.nodes * max(0.0, job.end_time - job.start_time) / 3600.0, 3)
    return replace(
        idle, in_slurm_job=True, job_id=job.job_id, job_name=job.job_name,
        partition=job.partition, nodes=job.nodes, start_time=job.start_time,
        end_time=job.end_time, seconds_left=seconds_left, node_hours_used=used,
        node_hours_total=total,
    )
