"""The one index of the user's jobs (scheduler/job_index.py): written by every
``record_submission`` (cells, sweeps, notebooks, kernels) with the job's kind and
the id of the Jupyter server whose kernel submitted; old entries pruned, kernels' too; only
the user's own files read, never through a symlink."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import job_index
from hpc_magics.scheduler.job_status import record_submission

DAY_S = 86400.0


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private Jupyter runtime dir, where the index lives."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


def submitted(root: Path, name: str, job_id: str, **meta: object) -> JobFolder:
    folder = JobFolder.create(root, name)
    folder.write_meta({"name": name, "backend": "local", **meta})
    record_submission(folder, job_id, time.time())
    return folder


def test_record_submission_indexes_the_folder_with_the_servers_id(
        tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(job_index.SERVER_ID_ENV, "server-under-test")
    started = time.time()
    folder = submitted(tmp_path / "work" / "hpc_jobs", "indexed", "4242")

    assert folder.meta()["server_id"] == "server-under-test"
    [entry] = job_index.entries()
    assert entry.folder == folder.path.absolute() and entry.job_id == "4242"
    assert entry.server_id == "server-under-test" and entry.name == "indexed"
    assert entry.submitted_at == pytest.approx(started, abs=5)
    assert entry.kind == "cell"
    index = job_index.index_dir()
    assert index.parent == runtime
    assert oct(index.stat().st_mode & 0o777) == oct(0o700)


def test_outside_a_server_the_entry_has_no_server(tmp_path: Path, runtime: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(job_index.SERVER_ID_ENV, raising=False)
    folder = submitted(tmp_path / "hpc_jobs", "terminal", "77")
    [entry] = job_index.entries()
    assert entry.server_id is None and folder.meta()["server_id"] is None


def test_every_kind_is_one_index_and_a_kernel_is_found_by_its_job_id(
        tmp_path: Path, runtime: Path) -> None:
    """Kernels were a second index under the kernels root: one now."""
    jobs, kernels = tmp_path / "hpc_jobs", tmp_path / "kernels"
    submitted(jobs, "a-cell", "10")
    sweep = submitted(jobs, "a-sweep", "11", kind="sweep")
    submitted(jobs, "a-notebook", "12", kind="notebook")
    kernel = submitted(kernels, "kernel-lab", "13", kind="kernel")
    second = submitted(kernels, "kernel-gpu", "14", kind="kernel")

    assert [(e.job_id, e.kind) for e in job_index.entries()] == [
        ("10", "cell"), ("11", "sweep"), ("12", "notebook"), ("13", "kernel"),
        ("14", "kernel")]
    assert job_index.any_entry(job_index.KERNEL_KINDS)
    kernels_of = job_index.entries(kinds=job_index.KERNEL_KINDS, job_ids=["13", "14", "10"])
    assert [e.folder for e in kernels_of] == [kernel.path.absolute(), second.path.absolute()]
    # an array task finds its array's folder (a local one here: no Slurm in this test)
    assert [f.path for f in job_index.folders_for("11_3", local=True)] == [
        sweep.path.absolute()]
    assert job_index.folders_for("11_3") == []  # no Slurm job of that number


def age(path: Path, days: float) -> None:
    then = time.time() - days * DAY_S
    os.utime(path, (then, then), follow_symlinks=False)


def test_old_entries_are_removed_kernels_too_and_others_files_ignored(
        tmp_path: Path, runtime: Path) -> None:
    """The kernels' own index was never pruned: its files grew with every kernel."""
    submitted(tmp_path / "hpc_jobs", "recent", "1")
    old_cell = submitted(tmp_path / "hpc_jobs", "old", "2")
    old_kernel = submitted(tmp_path / "kernels", "kernel-old", "3", kind="kernel")
    index = job_index.index_dir()
    for job_id in ("2", "3"):
        [path] = [p for p in index.iterdir() if f"-{job_id}-" in p.name]
        age(path, job_index.KEEP_DAYS + 1)
    (index / "cell-4-broken.json").write_text("{not json")
    (index / "cell-5-partial.json").write_text(json.dumps({"job_id": "5"}))
    if os.geteuid() == 0:  # as root a file can be given to someone else
        foreign = index / "cell-9-foreign.json"
        foreign.write_text(json.dumps(job_index.Entry(tmp_path, "9", "c", time.time(),
                                                      "x").to_json()))
        os.chown(foreign, 65534, 65534)

    assert [e.job_id for e in job_index.entries()] == ["1"]
    assert not job_index.any_entry(job_index.KERNEL_KINDS)
    assert not [p for p in index.iterdir() if "-2-" in p.name or "-3-" in p.name]
    assert old_cell.path.is_dir() and old_kernel.path.is_dir()  # only the entry goes


def test_no_entry_is_read_through_a_symlink(tmp_path: Path, runtime: Path) -> None:
    """An entry, or the index itself, that is a symlink names files the user did not write
    there (another user's index, a shared folder): never read."""
    folder = submitted(tmp_path / "hpc_jobs", "mine", "21")
    index = job_index.index_dir()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(job_index.Entry(folder.path, "22", None, time.time(),
                                                    None).to_json()))
    (index / "cell-22-linked.json").symlink_to(elsewhere)
    assert [e.job_id for e in job_index.entries()] == ["21"]
    assert job_index.folders_for("22") == []

    moved = tmp_path / "the-index"
    index.rename(moved)
    index.symlink_to(moved)
    assert job_index.entries() == []


def test_a_folder_link_is_not_the_jobs_folder(tmp_path: Path, runtime: Path) -> None:
    folder = submitted(tmp_path / "hpc_jobs", "real", "31")
    link = tmp_path / "hpc_jobs" / "link"
    link.symlink_to(folder.path)
    job_index.note(job_index.Entry(link, "32", None, time.time(), None))
    assert job_index.folders_for("32", local=True) == []
    assert [f.path for f in job_index.folders_for("31", local=True)] == [folder.path.absolute()]


def test_an_index_that_cannot_be_written_never_fails_a_submission(tmp_path: Path) -> None:
    blocker = tmp_path / "runtime"
    blocker.write_text("a file where the runtime dir should be")
    job_index.note(job_index.Entry(tmp_path, "5", None, time.time(), None), blocker)
    assert job_index.entries(blocker) == []
