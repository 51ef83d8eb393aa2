"""The submission index the server reads (scheduler/registry.py), written by every
``record_submission``, with the id of the Jupyter server whose kernel submitted."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import registry
from hpc_magics.scheduler.job_status import record_submission


def test_record_submission_indexes_the_folder_with_the_servers_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv(registry.SERVER_ID_ENV, "server-under-test")
    folder = JobFolder.create(tmp_path / "work" / "hpc_jobs", "indexed")
    folder.write_meta({"name": "indexed", "backend": "local"})
    started = time.time()
    record_submission(folder, "4242", started)

    assert folder.meta()["server_id"] == "server-under-test"
    [entry] = registry.entries()
    assert entry.folder == folder.path.absolute() and entry.job_id == "4242"
    assert entry.server_id == "server-under-test" and entry.name == "indexed"
    assert entry.submitted_at == pytest.approx(started)
    index = registry.registry_dir()
    assert index.parent == tmp_path / "runtime"
    assert oct(index.stat().st_mode & 0o777) == oct(0o700)


def test_outside_a_server_the_entry_has_no_server(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(registry.SERVER_ID_ENV, raising=False)
    folder = JobFolder.create(tmp_path / "hpc_jobs", "terminal")
    folder.write_meta({"backend": "local"})
    record_submission_to(tmp_path / "runtime", monkeypatch, folder)
    [entry] = registry.entries(tmp_path / "runtime")
    assert entry.server_id is None and folder.meta()["server_id"] is None


def record_submission_to(runtime: Path, monkeypatch: pytest.MonkeyPatch,
                         folder: JobFolder) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    record_submission(folder, "77", time.time())


def test_old_entries_are_dropped_and_others_files_ignored(tmp_path: Path) -> None:
    now = time.time()
    for job_id, age_days in (("1", 0.5), ("2", registry.KEEP_DAYS + 1)):
        registry.note(registry.Entry(tmp_path / f"job{job_id}", job_id, "c", now -
                                     age_days * 86400, None), tmp_path)
    index = registry.registry_dir(tmp_path)
    (index / "broken.json").write_text("{not json")
    (index / "partial.json").write_text(json.dumps({"job_id": "3"}))
    if os.geteuid() == 0:  # as root a file can be given to someone else
        foreign = index / "foreign.json"
        foreign.write_text(json.dumps(registry.Entry(tmp_path, "9", "c", now, "x").to_json()))
        os.chown(foreign, 65534, 65534)
    assert [e.job_id for e in registry.entries(tmp_path)] == ["1"]
    assert len(list(index.glob("2-*.json"))) == 0, "an entry past KEEP_DAYS is removed"


def test_an_index_that_cannot_be_written_never_fails_a_submission(tmp_path: Path) -> None:
    blocker = tmp_path / "runtime"
    blocker.write_text("a file where the runtime dir should be")
    registry.note(registry.Entry(tmp_path, "5", None, time.time(), None), blocker)
    assert registry.entries(blocker) == []
