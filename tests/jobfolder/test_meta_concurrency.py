"""One job's meta.json updated by several processes at once loses nothing, and a reader
racing the writers never sees an empty file."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.jobfolder.folder import META_FILE, JobFolder

WRITERS, UPDATES = 6, 300  # kernel, node, server, a second kernel... 1800 updates in all


def _write(path: str, writer: int, start: multiprocessing.synchronize.Event) -> None:
    folder = JobFolder(Path(path))
    start.wait()
    for step in range(UPDATES):
        folder.update_meta(**{f"writer{writer}-{step}": step})


def _read(path: str, start: multiprocessing.synchronize.Event, empty: multiprocessing.Value,
          stop: multiprocessing.synchronize.Event) -> None:
    folder = JobFolder(Path(path))
    start.wait()
    while not stop.is_set():
        if folder.meta() == {}:
            empty.value += 1


def test_many_processes_update_one_meta_and_nothing_is_lost(tmp_path: Path) -> None:
    folder = JobFolder.create(tmp_path / "jobs", "shared")
    folder.write_meta({"name": "shared", "job_id": "123"})
    context = multiprocessing.get_context("spawn")  # real, separate interpreters
    start, stop = context.Event(), context.Event()
    empty = context.Value("i", 0)
    writers = [context.Process(target=_write, args=(str(folder.path), i, start))
               for i in range(WRITERS)]
    reader = context.Process(target=_read, args=(str(folder.path), start, empty, stop))
    for process in [*writers, reader]:
        process.start()
    start.set()
    for process in writers:
        process.join(300)
    stop.set()
    reader.join(60)
    assert all(process.exitcode == 0 for process in [*writers, reader])
    meta = folder.meta()
    lost = [f"writer{w}-{s}" for w in range(WRITERS) for s in range(UPDATES)
            if f"writer{w}-{s}" not in meta]
    assert lost == [] and meta["job_id"] == "123"
    assert empty.value == 0, "a reader saw {} while the writers replaced meta.json"


def test_a_writer_never_replaces_a_damaged_meta_with_its_few_keys(tmp_path: Path) -> None:
    folder = JobFolder.create(tmp_path / "jobs", "damaged")
    (folder.path / META_FILE).write_text('{"job_id": "123", "na')  # cut off mid-write
    assert folder.meta() == {}  # a reader (a listing) goes on
    with pytest.raises(HpcMagicsError, match="damaged"):
        folder.update_meta(state="RUNNING")
    assert (folder.path / META_FILE).read_text() == '{"job_id": "123", "na'


def test_meta_stays_private_under_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        folder = JobFolder.create(tmp_path / "jobs", "loose")
        folder.update_meta(name="loose")
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.path.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder.path / META_FILE).stat().st_mode) == 0o600
    assert json.loads((folder.path / META_FILE).read_text()) == {"name": "loose"}


def test_shared_files_keep_their_modes_under_a_loose_umask(tmp_path: Path) -> None:
    """The scheduler caches (shared by a user's kernels and server) and a cell's results
    and outcome are their owner's alone, whatever the umask."""
    from hpc_magics.jobfolder.files import OUTCOME_FILE, RESULTS_FILE, CellResult, write_results
    from hpc_magics.scheduler.queue import write_private_json

    old = os.umask(0)
    try:
        write_private_json(tmp_path / "cache" / "queue.json", "{}")
        (tmp_path / "task").mkdir(mode=0o700)
        write_results(tmp_path / "task", CellResult(), "50_3", 1.0)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "cache" / "queue.json").stat().st_mode) == 0o600
    for name in (RESULTS_FILE, OUTCOME_FILE):
        assert stat.S_IMODE((tmp_path / "task" / name).stat().st_mode) == 0o600
