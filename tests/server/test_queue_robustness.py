"""The shared queue view where real sites differ: odd bytes from squeue, no flock.

Both are fakes on purpose, as their docstrings say: the test cluster's squeue prints valid
UTF-8 and its file system has flock.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.scheduler import commands
from hpc_magics.scheduler.queue import JobQueue

pytestmark = pytest.mark.timeout(120)


def squeue_shim(folder: Path, monkeypatch: pytest.MonkeyPatch, output: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "output").write_bytes(output)
    script = folder / "squeue"
    script.write_text(f"#!/bin/sh\necho call >> {folder / 'calls'}\ncat {folder / 'output'}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder / "calls"


def test_squeue_output_that_is_not_utf8_never_breaks_polling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake squeue: a job name in Latin-1 (as a user's locale may write it), and a stray
    byte in the reason, which a real squeue prints verbatim but this cluster's never has."""
    squeue_shim(tmp_path / "bin", monkeypatch,
                b"71|RUNNING|debug|1|0:05|20:00|N/A|None|N/A|2026-11-22T14:10:01|r\xe9sum\xe9\n"
                b"72|PENDING|debug|1|0:00|20:00|N/A|Prio\xff|N/A|2026-11-22T14:10:01|ok\n")
    view = JobQueue(user="alice", cluster="lab", cache_dir=tmp_path / "runtime").view()
    assert view.error is None
    assert [(j.job_id, j.state) for j in view.jobs] == [("71", "RUNNING"), ("72", "PENDING")]
    assert view.jobs[0].name == "r\ufffdsum\ufffd" and view.jobs[1].reason == "Prio\ufffd"
    answer = commands.run(["squeue"], timeout=10)
    assert answer.ok and "\ufffd" in answer.stdout


def test_file_lock_falls_back_where_flock_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``flock`` raising ENOLCK is what an NFS mount without a lock daemon answers; this
    machine's file systems all lock, so ``fcntl.flock`` is monkeypatched to refuse."""
    calls = squeue_shim(tmp_path / "bin", monkeypatch,
                        b"81|RUNNING|debug|1|0:05|20:00|N/A|None|N/A|N/A|job\n")
    refused: list[Any] = []

    def no_flock(fd: Any, operation: int) -> None:
        refused.append(operation)
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    shared = JobQueue(user="alice", cluster="lab", cache_dir=tmp_path / "runtime", interval_s=60)
    view = shared.view()
    assert refused and view.error is None and [j.job_id for j in view.jobs] == ["81"]
    # still shared: another reader uses the cached answer, a forced refresh asks again
    again = JobQueue(user="alice", cluster="lab", cache_dir=tmp_path / "runtime", interval_s=60)
    assert again.view() == view and len(calls.read_text().splitlines()) == 1
    assert again.view(max_age_s=0).updated != view.updated
    assert len(calls.read_text().splitlines()) == 2
    # the soft lock was released: nothing is left holding it
    assert not shared.cache_path.with_suffix(".lock.held").exists()
