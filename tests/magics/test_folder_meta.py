"""A job folder's meta.json, written by several watchers at once."""

from __future__ import annotations

import threading
from pathlib import Path

from hpc_magics.jobfolder.folder import JobFolder


def test_writers_of_one_job_folder_at_once_never_trip_over_each_other(tmp_path: Path) -> None:
    """Kernels and the server watching one job update its meta.json at the same time
    (found by benchmarks/bench_scheduler_calls.py with 5 kernels)."""
    folder = JobFolder.create(tmp_path / "jobs", "shared")
    folder.write_meta({"name": "shared"})
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            for step in range(100):
                folder.update_meta(**{f"writer{index}": step})
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert folder.meta()["name"] == "shared"
    assert not list(folder.path.glob("*.tmp"))
