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
    from hpc_magics.scheduler.queue import write_private_json

    (tmp_path / "cache").write_text("a file where the cache folder should be")
    write_private_json(tmp_path / "cache" / "queue.json", "{}")  # returns quietly
    assert (tmp_path / "cache").read_text().startswith("a file")
