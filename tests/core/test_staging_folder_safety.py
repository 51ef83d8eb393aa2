"""The node's staging folder (the /tmp fallback has a guessable name) is refused when it
is a symlink or another user's folder, and is private when it is made."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
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
    if os.getuid() == 0:
        target = tmp_path / "stage"
        target.mkdir()
        shutil.chown(target, user=SECOND_USER)  # raises LookupError without that user
        with pytest.raises(RuntimeError, match="belongs to"):
            staging.stage_in([], root=target)
        return
    # a shared, sticky folder as /tmp is (pytest's own tmp_path is private to this user,
    # where the second user could never make anything)
    shared = Path(tempfile.mkdtemp(prefix="hpcm-stage-"))
    shared.chmod(0o1777)
    target = shared / "stage"
    try:
        made = subprocess.run(["sudo", "-n", "-u", SECOND_USER, "mkdir", str(target)],
                              capture_output=True, timeout=30, check=False)
        if made.returncode != 0:
            pytest.skip(f"needs sudo -u {SECOND_USER} (scripts/run-tests sets it up)")
        assert target.stat().st_uid != os.getuid()
        with pytest.raises(RuntimeError, match="belongs to"):
            staging.stage_in([], root=target)
    finally:
        subprocess.run(["sudo", "-n", "-u", SECOND_USER, "rmdir", str(target)],
                       capture_output=True, timeout=30, check=False)
        shutil.rmtree(shared, ignore_errors=True)
