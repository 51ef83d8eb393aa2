"""Slurm job ids: plain (``123``), array (``123_4``, ``123_[1-5,7%2]``), heterogeneous
(``123+0``): one parser, so every view agrees on which entry belongs to which job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import HpcMagicsError

# base, then an array task or task range, or a het component
_JOB_ID = re.compile(r"^(\d+)(?:_(\d+|\[[\d,\-%:]+\]))?(?:\+(\d+))?$")


@dataclass(frozen=True)
class JobId:
    base: str
    tasks: str | None = None  # "4" or "[1-5,7]"; None: the whole job
    het: str | None = None

    @property
    def task_numbers(self) -> frozenset[int] | None:
        """The array tasks named (``None``: all of them)."""
        if self.tasks is None:
            return None
        if not self.tasks.startswith("["):
            return frozenset({int(self.tasks)})
        numbers: set[int] = set()
        for part in self.tasks[1:-1].split("%")[0].split(","):
            start, _, end = part.partition("-")
            if not start:
                continue
            end, _, step = end.partition(":")
            numbers.update(range(int(start), int(end or start) + 1, max(1, int(step or 1))))
        return frozenset(numbers)

    def covers(self, other: JobId) -> bool:
        """Is ``other`` (a queue or accounting entry) this job or one of its parts?"""
        if self.base != other.base or (self.het is not None and other.het != self.het):
            return False
        mine, theirs = self.task_numbers, other.task_numbers
        if mine is None:
            return True  # the whole job covers all its tasks and components
        return theirs is not None and bool(mine & theirs)

    def __str__(self) -> str:
        return (self.base + (f"_{self.tasks}" if self.tasks is not None else "")
                + (f"+{self.het}" if self.het is not None else ""))


def parse_job_id(text: str) -> JobId | None:
    """A ``JobId``, or ``None`` when ``text`` is not a Slurm job id."""
    match = _JOB_ID.match(str(text).strip())
    return JobId(*match.groups()) if match else None


def require_job_id(text: str) -> JobId:
    """Like ``parse_job_id``, but bad input is a one-line error naming the fix."""
    job_id = parse_job_id(text)
    if job_id is None:
        raise HpcMagicsError(f"{text!r} is not a Slurm job id: use 123, 123_4, 123_[1-5] "
                             "or 123+0 (see %hpc_jobs)")
    return job_id


def same_job(wanted: str, listed: str) -> bool:
    """Does the scheduler entry ``listed`` belong to the job ``wanted``?"""
    mine, theirs = parse_job_id(wanted), parse_job_id(listed)
    return mine.covers(theirs) if mine and theirs else wanted == listed


def task_order(job_id: str) -> tuple[int, int]:
    """A job id's sort key: its number, then its array task (``123_[2-3%1]``: 2; -1 for the
    whole job); ids that are not Slurm's sort first."""
    parsed = parse_job_id(job_id)
    if parsed is None:
        return (0, 0)
    tasks = parsed.task_numbers
    return (int(parsed.base), min(tasks) if tasks else -1)


T = TypeVar("T")


class JobIndex(Generic[T]):
    """Queue or accounting entries by job id, so that each of a sweep's thousand tasks
    finds its entries by lookup instead of comparing against every entry
    (``find(x)`` gives the entries ``same_job(x, entry)`` accepts)."""

    def __init__(self, entries: Iterable[T], job_id: Callable[[T], str]) -> None:
        self._exact: dict[str, list[T]] = {}
        self._by_base: dict[str, list[tuple[JobId | None, T]]] = {}
        self._grouped: dict[str, list[tuple[JobId, T]]] = {}  # ranges, whole jobs, het parts
        for entry in entries:
            text = job_id(entry)
            parsed = parse_job_id(text)
            self._exact.setdefault(text, []).append(entry)
            self._by_base.setdefault(parsed.base if parsed else text, []).append((parsed, entry))
            if parsed is not None and not _single_task(parsed):
                self._grouped.setdefault(parsed.base, []).append((parsed, entry))

    def find(self, wanted: str) -> list[T]:
        mine = parse_job_id(wanted)
        if mine is None:
            return list(self._exact.get(wanted, ()))
        if _single_task(mine):  # its own entries, and pending ranges that hold it
            own = [e for p, e in self._by_base.get(mine.base, ()) if p is not None
                   and _single_task(p) and p.tasks == mine.tasks] \
                if wanted not in self._exact else list(self._exact[wanted])
            return own + [e for p, e in self._grouped.get(mine.base, ()) if mine.covers(p)]
        return [e for p, e in self._by_base.get(mine.base, ()) if p is not None and mine.covers(p)]


def _single_task(job_id: JobId) -> bool:
    return job_id.tasks is not None and not job_id.tasks.startswith("[") and job_id.het is None
