"""``%hpc_jobs`` reads the folders of live kernel jobs only: with hundreds of old kernel
folders present, a listing reads one meta.json per live kernel (the older folders are
indexed once, by the first listing that needs the index)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.kernel import index
from hpc_magics.magics.job_list import kernel_folders, queue_entries
from hpc_magics.scheduler import commands

OLD_JOBS = 200
OLD_ID = 900_000_000  # ids far past the test cluster's: never a live job


def kernel_folder(root: Path, name: str, job_id: str) -> JobFolder:
    folder = JobFolder.create(root, name)
    folder.write_meta({"name": name, "kind": "kernel", "backend": "slurm", "job_id": job_id,
                       "state": "COMPLETED"})
    return folder


def counting_meta_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every read of a meta.json (a spy around the real read, nothing faked)."""
    count = [0]
    read_text = Path.read_text

    def counted(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == "meta.json":
            count[0] += 1
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    return count


def listed(root: Path, job_id: str) -> list[tuple[str, str]]:
    """The listing, once squeue shows the job just submitted (a view asked a moment
    before sbatch returned may not)."""
    deadline = time.monotonic() + 20
    while True:
        found = [(str(meta["name"]), job_id)
                 for job_id, (_, meta) in kernel_folders(queue_entries()[0], root).items()]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_a_listing_reads_only_the_folders_of_live_jobs(
        slurm_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kernels"
    answer = commands.run(["sbatch", "--parsable", "-J", "kernel-listed", "-t", "2",
                           "-o", "/dev/null", "--wrap", "sleep 120"], timeout=60)
    assert answer.ok, answer.stderr
    live = answer.stdout.strip().split(";")[0]
    try:
        for n in range(OLD_JOBS):  # made before the index existed
            kernel_folder(root, f"kernel-old{n}", str(OLD_ID + n))
        mine = kernel_folder(root, "kernel-live", live)
        index.note(root, live, mine.path)
        reads = counting_meta_reads(monkeypatch)

        assert listed(root, live) == [("kernel-live", live)]
        assert reads[0] >= OLD_JOBS  # the older folders: read once, to index them

        for n in range(OLD_JOBS):  # more history, indexed as the provisioner does
            old = kernel_folder(root, f"kernel-new{n}", str(OLD_ID + OLD_JOBS + n))
            index.note(root, str(OLD_ID + OLD_JOBS + n), old.path)
        reads[0] = 0
        assert listed(root, live) == [("kernel-live", live)]
        assert reads[0] == 1  # the live kernel's folder only, of 401
    finally:
        commands.run(["scancel", live], timeout=30)


def test_no_kernel_ever_means_no_listing_and_an_empty_index(tmp_path: Path) -> None:
    root = tmp_path / "kernels"
    assert not index.any_kernel(root)  # so no listing asks squeue about kernels
    root.mkdir()
    JobFolder.create(root, "cell").write_meta({"kind": "cell", "job_id": "12"})
    assert not index.any_kernel(root)
    assert index.folders_for(root, ["12"]) == []
