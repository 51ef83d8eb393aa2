"""What Slurm's accounting (``sacct``) says about many jobs: one call per interval per user.

``None`` means "accounting unreachable" (disabled, slurmdbd down, a time-out): callers
must never read it as "ended" or "failed".

``SharedAccounting`` is to ``sacct`` what ``JobQueue`` is to ``squeue``: one cache file per
user and cluster. A process adds the jobs it needs to the file's wanted list; whoever finds
the last call an interval old asks about every wanted job in ONE ``sacct`` (states and usage
alike) and writes the answers for all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

from ..core.efficiency import USAGE_FIELDS, Usage, parse_usage
from ..core.jobids import JobIndex, parse_job_id
from ..core.jobs import is_final, normalize_state
from ..core.users import login_name
from ..jobfolder.files import read_json
from . import commands
from .queue import ANSWER_WITHIN_S, SharedCache, file_lock, write_private_json
from .slurm_text import slurm_timestamp

SACCT_TIMEOUT_S = 20.0
CACHE_VERSION = 1
# answers and wishes older than this are dropped from the shared file
FORGET_AFTER_S = 1800.0
# "recent" for %hpc_jobs --all: the user's jobs that ended within this window
RECENT_WINDOW = "now-1days"


@dataclass(frozen=True)
class AccountingRecord:
    job_id: str  # as sacct spells it: 123, 123_4, 123_[5-9], 123+0
    state: str
    submit_time: float | None
    usage: Usage | None = None

    @property
    def name(self) -> str | None:
        return self.usage.name if self.usage is not None else None


class NotYet:
    """Accounting has not been asked about the job yet (another process asked this interval)."""


NOT_YET = NotYet()
Answers = dict[str, tuple[AccountingRecord, ...] | None]


def parse_accounting(text: str) -> tuple[AccountingRecord, ...]:
    """``sacct -n -P -o USAGE_FIELDS`` (steps included) as records that carry their usage."""
    usages = parse_usage(text)
    parsed = [parse_job_id(u.job_id) for u in usages]
    started = {(p.base, p.tasks) for p in parsed if p and p.tasks and p.tasks.isdigit()}
    records = []
    for usage in usages:
        job_id = _never_started(usage.job_id, started)
        if job_id:
            submit_time, usage = slurm_timestamp(usage.submitted), replace(usage, job_id=job_id)
            # slurmdbd's stand-in for a job whose own record has not arrived yet (``provisional``:
            # seen for jobs that end within a second or two, and for a running array's last task,
            # under the array's own id): its state is the job's, its figures are not (kept
            # without them), and it is never the last word (``_settled``)
            records.append(AccountingRecord(job_id, usage.state, submit_time,
                                            None if usage.provisional else usage))
    return tuple(records)


def _never_started(job_id: str, started: set[tuple[str, str]]) -> str:
    """A pending range's id without the tasks listed on their own, ``""`` when none is
    left. slurmdbd keeps the range as it was when a task started a moment before the array
    was cancelled: ``123_1`` (ran 1 s, cancelled) beside ``123_[1-3%1]``, for good (seen on
    the test cluster); the range stands only for the tasks that never started."""
    parsed = parse_job_id(job_id)
    if parsed is None or not parsed.tasks or parsed.tasks[0] != "[" or parsed.het:
        return job_id
    listed = parsed.task_numbers or frozenset()
    numbers = sorted(n for n in listed if (parsed.base, str(n)) not in started)
    if len(numbers) == len(listed):
        return job_id
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][-1] == number - 1:
            runs[-1][1:] = [number]
        else:
            runs.append([number])
    throttle = parsed.tasks[1:-1].partition("%")[2]
    text = ",".join("-".join(map(str, run)) for run in runs) + (f"%{throttle}" if throttle else "")
    return f"{parsed.base}_[{text}]" if numbers else ""


def _record_from_dict(data: dict[str, Any]) -> AccountingRecord:
    usage = data.get("usage")
    return AccountingRecord(str(data["job_id"]), str(data["state"]), data.get("submit_time"),
                            Usage.from_dict(usage) if usage else None)


def sacct_usage(job_ids: Sequence[str], runner: Callable[..., commands.CommandResult]
                = commands.run) -> tuple[AccountingRecord, ...] | None:
    """One ``sacct`` call for all ``job_ids``, states and usage; ``None``: unreachable."""
    if not job_ids:
        return ()
    text = commands.output(["sacct", "-n", "-P", "-o", ",".join(USAGE_FIELDS),
                            "-j", ",".join(job_ids)], timeout=SACCT_TIMEOUT_S, runner=runner)
    return None if text is None else parse_accounting(text)


def base_of(job_id: str) -> str:
    parsed = parse_job_id(job_id)
    return parsed.base if parsed is not None else job_id


@dataclass
class SharedAccounting(SharedCache):
    """One cached ``sacct`` per interval for all of a user's processes (see module doc)."""

    KIND: ClassVar[str] = "sacct"
    _index: tuple[tuple[AccountingRecord, ...], JobIndex[AccountingRecord]] | None = field(
        default=None, repr=False)

    def records(self, job_ids: list[str], max_age: float
                ) -> tuple[AccountingRecord, ...] | NotYet | None:
        """The records of ``job_ids``, per base id, once each (a sweep's thousand tasks
        share one base). ``None``: unreachable; ``NOT_YET``: asked next interval."""
        found = self.answers_within(job_ids, max_age)
        if found is None:
            return None  # accounting lags (slurmdbd slow or down): unreachable for now
        answers = [found.get(base, NOT_YET) for base in dict.fromkeys(map(base_of, job_ids))]
        if any(a is None for a in answers):
            return None
        if any(isinstance(a, NotYet) for a in answers):
            return NOT_YET
        return tuple(r for a in answers if isinstance(a, tuple) for r in a)

    def records_of(self, records: tuple[AccountingRecord, ...],
                   job_id: str) -> list[AccountingRecord]:
        """The records of ``job_id`` (an index kept per answer: a sweep's tasks)."""
        if self._index is None or self._index[0] is not records:
            self._index = (records, JobIndex(records, lambda r: r.job_id))
        return self._index[1].find(job_id)

    def answers_within(self, job_ids: list[str], max_age: float) -> Answers | None:
        """``answers``, waited for at most ``ANSWER_WITHIN_S``: a slow sacct (a lagging
        slurmdbd) is unreachable meanwhile; one at a time from this process."""
        return self._within(lambda: self.answers(job_ids, max_age), ANSWER_WITHIN_S)

    def answers(self, job_ids: Iterable[str], max_age_s: float | None = None) -> Answers:
        """Records per base id of ``job_ids``, answered within ``max_age_s`` (default: the
        interval). A base missing from the result has not been asked yet (someone else's
        call is fresh): it is wanted now and comes with the next call. ``None``: that call
        found accounting unreachable."""
        job_ids = list(job_ids)
        bases = sorted({base_of(j) for j in job_ids})
        if not bases:
            return {}
        max_age = self.interval_s if max_age_s is None else max_age_s
        found = self._fresh(_unsettle_missing(self._read(), job_ids), bases, max_age)
        if len(found) == len(bases):
            return found
        with self._thread_lock, file_lock(self.cache_path, SACCT_TIMEOUT_S + 5.0) as locked:
            data = _unsettle_missing(self._read(), job_ids)
            found = self._fresh(data, bases, max_age)
            if len(found) == len(bases) or not locked:
                return found
            now = time.time()
            wanted: dict[str, float] = data["wanted"]
            for base in bases:
                wanted[base] = now
            if now - float(data["last_call"] or 0.0) >= max_age:
                self._ask(data, now)
                found = self._fresh(data, bases, max_age)
            self._write(data)
            return found

    def settled(self, job_id: str) -> bool:
        """Accounting's last answer about ``job_id`` (its base's, with the task listed when
        ``job_id`` is one) is final for good."""
        data = _unsettle_missing(self._read(), [job_id])
        return _settled(data["answers"].get(base_of(job_id)))

    def _ask(self, data: dict[str, Any], now: float) -> None:
        """One call for every wanted job whose answer is not settled (final)."""
        answers: dict[str, Any] = data["answers"]
        ask = sorted(b for b, t in data["wanted"].items() if now - t < FORGET_AFTER_S
                     and not _settled(answers.get(b)))
        records = sacct_usage(ask, self.runner)
        # the answers are as of the ask; the next call waits an interval from the answer,
        # so a slurmdbd slower than the interval is never asked back to back
        data["last_call"] = time.time()
        for base in ask:
            mine = None if records is None else [
                asdict(r) for r in records if base_of(r.job_id) == base]
            before = answers.get(base) or {}
            # final twice: settled even if a step never reports its figures
            final_before = bool(before.get("records")) and all(
                is_final(r["state"]) for r in before["records"])
            answers[base] = {"at": now, "records": mine, "final_before": final_before}

    @staticmethod
    def _fresh(data: dict[str, Any], bases: list[str], max_age: float) -> Answers:
        now = time.time()
        found: Answers = {}
        for base in bases:
            answer = data["answers"].get(base)
            if answer is not None and (_settled(answer) or now - answer["at"] < max_age):
                records = answer["records"]
                found[base] = None if records is None else tuple(map(_record_from_dict, records))
        return found

    def _read(self) -> dict[str, Any]:
        data = read_json(self.cache_path)
        if isinstance(data, dict) and data.get("version") == CACHE_VERSION:
            return data
        return {"version": CACHE_VERSION, "last_call": 0.0, "wanted": {}, "answers": {}}

    def _write(self, data: dict[str, Any]) -> None:
        now = time.time()
        data["wanted"] = {b: t for b, t in data["wanted"].items() if now - t < FORGET_AFTER_S}
        data["answers"] = {b: a for b, a in data["answers"].items()
                           if now - a["at"] < FORGET_AFTER_S or b in data["wanted"]}
        write_private_json(self.cache_path, json.dumps(data))


def _unsettle_missing(data: dict[str, Any], job_ids: Iterable[str]) -> dict[str, Any]:
    """An answer that lists none of a wanted array task is not settled, however final its
    records: sacct leaves out tasks that have not started yet (throttled by ``%N``), at
    times even the ``123_[5-6%4]`` record that stands for them."""
    answers = data["answers"]
    indexes: dict[str, JobIndex[dict[str, Any]]] = {}  # a sweep's thousand tasks: lookups
    for job_id in job_ids:
        base = base_of(job_id)
        answer = answers.get(base)
        if not answer or not answer.get("records") or answer.get("missing"):
            continue
        if base not in indexes:
            indexes[base] = JobIndex(answer["records"], lambda record: str(record["job_id"]))
        if not indexes[base].find(job_id):
            answer["missing"] = True  # asked again: the next answer replaces this one
    return data


def _settled(answer: dict[str, Any] | None) -> bool:
    """Every record final, with its usage complete, and every wanted task listed: nothing
    later will change it."""
    if answer is None or not answer.get("records") or answer.get("missing"):
        return False
    for record in answer["records"]:
        usage = record.get("usage")
        if usage is None or usage.get("provisional") or not is_final(record["state"]):
            return False  # a stand-in (provisional): the job's own record is due
        if usage.get("max_rss_mb") is None and (usage.get("elapsed_s") or 0) > 0 \
                and not answer.get("final_before"):
            return False  # the steps' figures can lag the job's end a moment
    return True


def recent_jobs(user: str | None = None, runner: Callable[..., commands.CommandResult]
                = commands.run) -> tuple[AccountingRecord, ...] | None:
    """The user's jobs of the last day (``%hpc_jobs --all``); ``None``: unreachable."""
    text = commands.output(["sacct", "-n", "-P", "-X", "-u", user or login_name(), "-S",
                            RECENT_WINDOW, "-o", ",".join(USAGE_FIELDS)],
                           timeout=SACCT_TIMEOUT_S, runner=runner)
    return None if text is None else parse_accounting(text)


# ------------------------------------------------------------ a requeued job's segments
@dataclass(frozen=True)
class Segment:
    """One run of a requeued job: ``sacct --duplicates`` lists each (REQUEUED ones first,
    the current one last), asked on demand (``handle.segments()``), never in a loop."""

    index: int  # 1, 2, …: the order Slurm ran them in
    state: str  # REQUEUED for a segment that ended in a requeue
    start: float | None  # epoch seconds, None while pending
    end: float | None  # None while running


def parse_segments(text: str, job_id: str) -> tuple[Segment, ...]:
    """``JobID|State|Start|End`` lines of ``sacct -n -X -P -D``; other ids are skipped."""
    rows = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or parts[0] != job_id:
            continue
        rows.append((normalize_state(parts[1]), slurm_timestamp(parts[2]),
                     slurm_timestamp(parts[3])))
    rows.sort(key=lambda row: row[1] if row[1] is not None else float("inf"))
    return tuple(Segment(i, state, start, end) for i, (state, start, end) in enumerate(rows, 1))


def job_segments(job_id: str) -> tuple[Segment, ...] | None:
    """The job's segments; ``None`` when accounting cannot be asked (never "no segments")."""
    text = commands.output(["sacct", "-n", "-X", "-P", "-D", "-o", "JobID,State,Start,End",
                            "-j", job_id], timeout=SACCT_TIMEOUT_S)
    return None if text is None else parse_segments(text, job_id)
