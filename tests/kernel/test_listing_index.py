"""``%hpc_jobs`` reads the folders of live kernel jobs only: with hundreds of old kernel
folders in the one job index (scheduler/job_index.py), a listing reads one meta.json per
live kernel."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.magics.job_list import kernel_folders, queue_entries
from hpc_magics.scheduler import commands, job_index
from hpc_magics.scheduler.job_status import record_submission

OLD_JOBS = 200
OLD_ID = 900_000_000  # ids far past the test cluster's: never a live job


def kernel_folder(root: Path, name: str, job_id: str) -> JobFolder:
    """A kernel's folder, indexed as the provisioner's submission indexes it."""
    folder = JobFolder.create(root, name)
    folder.write_meta({"name": name, "kind": "kernel", "backend": "slurm"})
    record_submission(folder, job_id, time.time())
    return folder


def counting_meta_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts this thread's reads of a meta.json (a spy around the real read, nothing
    faked): the listing runs here, while earlier tests' widget and watcher threads in this
    worker may still read their own jobs' folders (CI once counted 20)."""
    count = [0]
    read_text = Path.read_text
    listing_thread = threading.get_ident()

    def counted(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == "meta.json" and threading.get_ident() == listing_thread:
            count[0] += 1
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    return count


def listed(job_id: str) -> list[tuple[str, str]]:
    """The listing, once squeue shows the job just submitted (a view asked a moment
    before sbatch returned may not)."""
    deadline = time.monotonic() + 20
    while True:
        found = [(str(meta["name"]), job_id)
                 for job_id, (_, meta) in kernel_folders(queue_entries()[0]).items()]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_a_listing_reads_only_the_folders_of_live_jobs(
        slurm_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # its own index
    root = tmp_path / "kernels"
    answer = commands.run(["sbatch", "--parsable", "-J", "kernel-listed", "-t", "2",
                           "-o", "/dev/null", "--wrap", "sleep 120"], timeout=60)
    assert answer.ok, answer.stderr
    live = answer.stdout.strip().split(";")[0]
    try:
        for n in range(2 * OLD_JOBS):  # the kernels of the last days
            kernel_folder(root, f"kernel-old{n}", str(OLD_ID + n))
        kernel_folder(root, "kernel-live", live)
        reads = counting_meta_reads(monkeypatch)

        assert listed(live) == [("kernel-live", live)]
        assert reads[0] == 1  # the live kernel's folder only, of 401
    finally:
        commands.run(["scancel", live], timeout=30)


def test_no_kernel_lately_means_no_listing(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert not job_index.any_entry(job_index.KERNEL_KINDS)  # so no listing asks squeue
    cell = JobFolder.create(tmp_path / "hpc_jobs", "cell")
    cell.write_meta({"name": "cell", "backend": "local"})
    record_submission(cell, "12", time.time())
    assert not job_index.any_entry(job_index.KERNEL_KINDS)
    assert kernel_folders(["12"]) == {}
