"""Who may see and use the jobs root and the job folders (file modes, no cluster)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hpc_magics.jobfolder.folder import JobFolder, ensure_jobs_root, find_job_folders


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_jobs_root_is_private_in_a_private_or_world_writable_folder(tmp_path: Path) -> None:
    assert mode(ensure_jobs_root(tmp_path / "mine" / "hpc_jobs")) == 0o700
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch.chmod(0o1777)  # like /tmp: not a project folder
    assert mode(ensure_jobs_root(scratch / "hpc_jobs")) == 0o700


def test_jobs_root_in_a_project_folder_is_shared_with_its_group(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    project.chmod(0o2770)
    root = ensure_jobs_root(project / "hpc_jobs")
    assert mode(root) == 0o3770  # setgid + sticky + group rwx
    assert root.stat().st_gid == project.stat().st_gid
    folder = JobFolder.create(root, "a job")
    assert mode(folder.path) == 0o700 and folder.path.stat().st_uid == os.getuid()
    ensure_jobs_root(root)  # again: a shared root keeps its group access
    assert mode(root) == 0o3770


def test_an_existing_root_loses_access_for_others(tmp_path: Path) -> None:
    root = tmp_path / "hpc_jobs"
    root.mkdir()
    root.chmod(0o755)
    ensure_jobs_root(root)
    assert mode(root) == 0o750


def test_only_folders_with_meta_are_listed_newest_first(tmp_path: Path) -> None:
    first = JobFolder.create(tmp_path, "first")
    first.write_meta({"job_id": "1"})
    second = JobFolder.create(tmp_path, "second")
    second.write_meta({"job_id": "2"})
    os.utime(first.path, (1, 1))
    JobFolder.create(tmp_path, "no-meta-yet")
    (tmp_path / "stray-file").write_text("")
    assert [f.path for f in find_job_folders(tmp_path)] == [second.path, first.path]
