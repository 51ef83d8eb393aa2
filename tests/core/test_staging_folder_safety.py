"""The node's staging folder (the /tmp fallback has a guessable name) is refused when it
is a symlink or another user's folder, and is private when it is made."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from hpc_magics.node import staging

SECOND_USER = "hpcuser2"


def test_a_new_staging_folder_is_private_under_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = staging.private_dir(tmp_path / "stage")
    finally:
        os.umask(old)
    assert stat.S_IMODE(made.stat().st_mode) == 0o700


def test_a_symlink_in_its_place_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "stage").symlink_to(elsewhere)
    with pytest.raises(RuntimeError, match="not a folder"):
        staging.stage_in([], root=tmp_path / "stage")
    assert list(elsewhere.iterdir()) == []


def test_another_users_folder_in_its_place_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "stage"
    if os.getuid() == 0:
        target.mkdir()
        shutil.chown(target, user=SECOND_USER)  # raises LookupError without that user
    else:
        tmp_path.chmod(0o777)  # so the second user may create it here
        made = subprocess.run(["sudo", "-n", "-u", SECOND_USER, "mkdir", str(target)],
                              capture_output=True, timeout=30, check=False)
        if made.returncode != 0:
            pytest.skip(f"needs sudo -u {SECOND_USER} (scripts/run-tests sets it up)")
    with pytest.raises(RuntimeError, match="belongs to"):
        staging.stage_in([], root=target)


def test_a_cache_that_cannot_be_written_never_raises(tmp_path: Path) -> None:
    """The server's refresh thread writes the queue cache each round: a failed write (its
    folder taken by a file, a full disk) must not end the thread."""
    from hpc_magics.scheduler.cache_file import write_private_json

    (tmp_path / "cache").write_text("a file where the cache folder should be")
    write_private_json(tmp_path / "cache" / "queue.json", "{}")  # returns quietly
    assert (tmp_path / "cache").read_text().startswith("a file")


def test_the_fallback_name_ends_in_the_job_scripts_random_part(tmp_path: Path) -> None:
    from hpc_magics.core.jobscript import JobParts
    from hpc_magics.core.scale import STAGE_TOKEN_VARIABLE, ScaleOptions, scaled_parts

    parts = scaled_parts(JobParts(run=("cd /x", "python cell")), ScaleOptions(
        stage=(str(tmp_path),)), "python")
    export = next(line for line in parts.run if line.startswith("export "))
    made = subprocess.run(["bash", "-c", f"{export}; echo ${STAGE_TOKEN_VARIABLE}"],
                          capture_output=True, text=True, timeout=30, check=True)
    token = made.stdout.strip()
    assert len(token) == 16 and int(token, 16) >= 0
    env = {"SLURM_JOB_ID": "77", "SLURMD_NODENAME": "c9", STAGE_TOKEN_VARIABLE: token}
    assert staging.local_root(env).name.endswith(f"-77-c9-{token}")
    # not the job script's hex (a path, say): never part of the name
    env[STAGE_TOKEN_VARIABLE] = "../../etc"
    assert staging.local_root(env).name.endswith("-77-c9")
