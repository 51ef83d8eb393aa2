"""Drill: slurmdbd stops (accounting down or lagging). Jobs still run and finish; their
state comes from the queue and the job folder, with "accounting unreachable" beside it,
never failed; calls stay quick; results arrive; once slurmdbd is back sacct's word
settles the state."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hpc_magics.scheduler.job_status import UNREACHABLE

from .conftest import Stopwatch, last_handle, outage, wait_for

pytestmark = [pytest.mark.drills, pytest.mark.slurm, pytest.mark.timeout(240)]

CELL = "import time\ntime.sleep(3)\nanswer = 'accounted for later'"


def test_slurmdbd_stopped(drill_shell: Any, stopwatch: Stopwatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    with outage("slurmdbd"):
        stopwatch.quick("%%sbatch", lambda: drill_shell.run_cell_magic("sbatch", "", CELL))
        handle = last_handle(drill_shell)
        seen: set[tuple[str, str]] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = stopwatch.quick("handle.refresh", lambda: handle.refresh(max_age_s=0))
            seen.add((state, handle.status.note))
            stopwatch.quick("%hpc_jobs", lambda: drill_shell.run_line_magic("hpc_jobs", ""))
            assert state not in {"FAILED", "ENDED", "UNKNOWN"} or handle.status.note, state
            if state == "COMPLETED":
                break
            time.sleep(0.5)
        final = handle.status
        # Slurm's queue may still list the ended job (MinJobAge): then it says COMPLETED
        # itself; once it has left, only the job's own files can prove the end, and the
        # missing accounting is said beside it
        assert final.state == "COMPLETED", (final, seen)
        assert final.source == "squeue" or (
            final.source == "results" and final.note == UNREACHABLE), (final, seen)
        if final.source == "results":
            capsys.readouterr()
            stopwatch.quick("%hpc_jobs", lambda: drill_shell.run_line_magic("hpc_jobs", ""))
            assert UNREACHABLE in capsys.readouterr().out
        stopwatch.quick("%hpc_fetch", lambda: drill_shell.run_line_magic(
            "hpc_fetch", handle.job_id))
        assert drill_shell.user_ns["answer"] == "accounted for later"

    # accounting is back: its answer settles the state for good
    wait_for(lambda: handle.refresh(max_age_s=0) == "COMPLETED"
             and handle.status.source == "sacct", 90, "sacct's COMPLETED")
    assert handle.status.definite and handle.status.note == ""


def test_lagging_accounting_never_blocks(drill_shell: Any, tmp_path: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """sacct answering in 3 s (a busy slurmdbd): refresh comes back while sacct is still
    asking (it never waits for accounting), one sacct at a time, and the late answer is used.

    Shown by behaviour, not by a clock: the stand-in ``sacct`` counts its starts and ends,
    so a refresh that returned while a sacct had started and not ended did not wait for it.
    The lag is a fake (a ``sacct`` first on PATH that sleeps, then runs the real one):
    stopping slurmdbd gives refusals, not lag.
    """
    import os
    import shutil

    folder = tmp_path / "slow-bin"
    folder.mkdir()
    started, ended = folder / "started", folder / "ended"
    (folder / "sacct").write_text(
        f"#!/bin/sh\necho x >> {started}\nsleep 3\n{shutil.which('sacct')} \"$@\"\n"
        f"status=$?\necho x >> {ended}\nexit $status\n")
    (folder / "sacct").chmod(0o755)

    def count(path: Any) -> int:
        return len(path.read_text().splitlines()) if path.exists() else 0

    drill_shell.run_cell_magic("sbatch", "", "import time\ntime.sleep(2)\nanswer = 'done'")
    handle = last_handle(drill_shell)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    notes, returned_while_asking = set(), False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        handle.refresh(max_age_s=0)
        asking = count(started) - count(ended)  # sacct calls still running now
        assert asking <= 1, f"{asking} sacct calls at once: one at a time"
        notes.add(handle.status.note)
        returned_while_asking |= asking == 1 and handle.status.note == UNREACHABLE
        if handle.status.source == "sacct":
            break
        time.sleep(0.5)
    assert handle.status.state == "COMPLETED" and handle.status.source == "sacct"
    assert UNREACHABLE in notes  # said while it lagged, never "failed" or "ended"
    assert returned_while_asking, "refresh waited for the slow sacct"
