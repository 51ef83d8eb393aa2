"""The user's sacct cache: one call per interval, whichever process asks, for every job
any of them wants. Real sacct behind a counting wrapper first on PATH."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hpc_magics.scheduler import commands
from hpc_magics.scheduler.accounting import SharedAccounting

# The real sacct, counted through the runner both instances are given: a wrapper first on
# PATH also counted the calls of other tests' watchers still polling in the same pytest-xdist
# worker (the one "unexplained" third call of a parallel run, seen again once the test left
# the serial phase).
INTERVAL_S = 8.0


def test_one_call_per_interval_for_all_processes_jobs(slurm_cluster: Any, tmp_path: Path
                                                      ) -> None:
    answer = commands.run(["sbatch", "--parsable", "-t", "1", "-o", str(tmp_path / "%j.out"),
                           "--wrap", "true"], timeout=30)
    assert answer.ok, answer.stderr
    job = answer.stdout.strip().split(";")[0]
    other = str(int(job) + 100000)  # an id accounting does not know
    calls: list[str] = []

    def counted(argv: list[str], timeout: float) -> commands.CommandResult:
        calls.append(" ".join(argv))
        return commands.run(argv, timeout=timeout)

    def process() -> SharedAccounting:  # what each kernel builds: same user, same file
        return SharedAccounting(user="u", cluster="lab", interval_s=INTERVAL_S,
                                cache_dir=tmp_path / "runtime", runner=counted)

    first, second = process(), process()
    assert set(first.answers([job])) == {job}
    # another process wants another job within the interval: it waits for the next call
    assert second.answers([other]) == {}
    assert second.answers([job]).keys() == {job}  # the fresh answer is shared
    assert len(calls) == 1 and calls[0].endswith(f"-j {job}")
    time.sleep(INTERVAL_S + 0.1)
    found = first.answers([job])  # the next call asks for what every process wants
    asked = set(calls[-1].rsplit("-j ", 1)[1].split(","))
    # the other process's job too; ours only unless accounting had settled it already
    assert len(calls) == 2 and asked in ({job, other}, {other}), calls
    assert second.answers([other]) == {other: ()}  # asked, and accounting knows nothing
    assert len(calls) == 2
    assert found[job][0].job_id == job  # type: ignore[index]


# sacct's answers about a running two-task array, as the test cluster gave them: at first only
# slurmdbd's stand-in for task 1 (the task that carries the array's own id), named
# "allocation", with no time limit and no memory request; the tasks' own records later.
PLACEHOLDER = ("3716|FAILED|2026-11-23T21:28:36|1:0|00:00:01||00:00.274|||1|cpu=1,node=1|c1|"
               "allocation\n")
TASKS = """\
3716_0|COMPLETED|2026-11-23T21:28:36|0:0|00:00:01|00:05:00|00:00.271||1000M|1|billing=1,cpu=1,mem=1000M,node=1|c1|eff
3716_0.batch|COMPLETED|2026-11-23T21:28:36|0:0|00:00:01||00:00.012|||1|cpu=1,mem=1000M,node=1|c1|batch
3716_1|FAILED|2026-11-23T21:28:36|1:0|00:00:01|00:05:00|00:00.274||1000M|1|billing=1,cpu=1,mem=1000M,node=1|c1|eff
"""


def test_slurmdbds_stand_in_record_is_never_the_last_word(tmp_path: Path) -> None:
    """A fake sacct: the stand-in record is a moment of slurmdbd's the cluster shows only by
    chance (taken as settled, it once hid a sweep's tasks: %hpc_efficiency had no figures)."""
    answers = [PLACEHOLDER, PLACEHOLDER, TASKS + PLACEHOLDER, TASKS]

    def fake_sacct(argv: list[str], timeout: float) -> commands.CommandResult:
        return commands.CommandResult(tuple(argv), 0, answers.pop(0), "")

    accounting = SharedAccounting(user="u", cluster="lab", interval_s=0.2,
                                  cache_dir=tmp_path / "runtime", runner=fake_sacct)
    for _ in range(3):  # its state is the job's, its figures are not; it settles nothing
        records = accounting.answers(["3716_0"])["3716"] or ()
        stand_in = [r for r in records if r.job_id == "3716"]
        assert [(r.state, r.usage) for r in stand_in] == [("FAILED", None)]
        assert not accounting.settled("3716")
        time.sleep(0.25)
    records = accounting.answers(["3716_0"])["3716"] or ()
    assert [(r.job_id, r.state) for r in records] == [("3716_0", "COMPLETED"),
                                                      ("3716_1", "FAILED")]
    assert all(r.usage is not None for r in records) and accounting.settled("3716")


def test_an_array_missing_a_wanted_task_is_not_settled(tmp_path: Path) -> None:
    """A fake sacct: twice it listed a throttled array (``%4``) without its two tasks still
    to start, every record final (seen on the test cluster; the sweep's efficiency then
    never had figures for them). The tasks asked about decide when it is settled."""
    first = TASKS.replace("3716_1|FAILED", "3716_3|FAILED")  # tasks 0 and 3; 1 and 2 to come
    to_come = TASKS.splitlines()[2].replace("3716_1|FAILED", "3716_[1-2%4]|PENDING") + "\n"
    answers = [first, first, first + to_come, TASKS + first, TASKS + first]

    def fake_sacct(argv: list[str], timeout: float) -> commands.CommandResult:
        return commands.CommandResult(tuple(argv), 0, answers.pop(0), "")

    accounting = SharedAccounting(user="u", cluster="lab", interval_s=0.2,
                                  cache_dir=tmp_path / "runtime", runner=fake_sacct)
    wanted = [f"3716_{task}" for task in range(4)]

    def ask() -> list[str]:
        time.sleep(0.25)
        return sorted(r.job_id for r in accounting.answers(wanted)["3716"] or ())

    assert ask() == ["3716_0", "3716_3"] and not accounting.settled("3716_1")
    assert ask() == ["3716_0", "3716_3"]  # final twice: settled for the tasks it lists only
    assert accounting.settled("3716_0") and not accounting.settled("3716_1")
    assert ask() == ["3716_0", "3716_3", "3716_[1-2%4]"]  # asked again: they are pending
    assert ask() == ["3716_0", "3716_1", "3716_3"]
    assert ask() == ["3716_0", "3716_1", "3716_3"] and answers == []
    assert accounting.settled("3716_1") and not accounting.settled("3716_2")  # still unlisted


def test_a_slurmdbd_slower_than_the_interval_is_never_asked_back_to_back(
        tmp_path: Path) -> None:
    """A fake sacct taking longer than the interval (a loaded slurmdbd; the test cluster
    cannot be made slow on demand). Its answer is stale on arrival, as of when it was
    asked, yet the next call waits a whole interval from the answer."""
    calls: list[tuple[float, float]] = []

    def slow_sacct(argv: list[str], timeout: float) -> commands.CommandResult:
        began = time.monotonic()
        time.sleep(0.5)
        calls.append((began, time.monotonic()))
        return commands.CommandResult(tuple(argv), 0, PLACEHOLDER, "")

    accounting = SharedAccounting(user="u", cluster="lab", interval_s=0.3,
                                  cache_dir=tmp_path / "runtime", runner=slow_sacct)
    until = time.monotonic() + 2.5
    while time.monotonic() < until:  # an impatient poller, and another process like it
        for process in (accounting, replace(accounting)):
            process.answers(["3716"])
        time.sleep(0.02)
    gaps = [began - ended for (_, ended), (began, _) in itertools.pairwise(calls)]
    assert len(calls) >= 2 and min(gaps) >= 0.3 - 0.02, gaps
