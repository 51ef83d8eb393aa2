"""Profiles are parsed once while their files are unchanged (every %%sbatch cell looks its
profile up), and an edited, added, removed or unreadable profile file counts at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import available_profiles, load_profile

SITE = """description = "{description}"
default_partition = "main"
[partitions.main]
max_time = "{max_time}"
"""


def write(path: Path, description: str, max_time: str = "1h") -> None:
    path.write_text(SITE.format(description=description, max_time=max_time))


def test_the_same_file_is_parsed_once(tmp_path: Path) -> None:
    write(tmp_path / "site.toml", "first")
    first = load_profile("site", [tmp_path])
    assert first.description == "first"
    assert load_profile("site", [tmp_path]) is first


def test_an_edited_file_counts_at_the_next_lookup(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    write(path, "first", "1h")
    assert load_profile("site", [tmp_path]).partitions["main"].max_time_s == 3600
    write(path, "first", "2h")  # same size: the modification time tells
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert load_profile("site", [tmp_path]).partitions["main"].max_time_s == 7200
    write(path, "a longer description now")
    assert load_profile("site", [tmp_path]).description == "a longer description now"


def test_added_and_removed_files_are_listed_at_once(tmp_path: Path) -> None:
    write(tmp_path / "one.toml", "one")
    assert set(available_profiles([tmp_path])) == {"one"}
    write(tmp_path / "two.toml", "two")
    assert set(available_profiles([tmp_path])) == {"one", "two"}
    (tmp_path / "one.toml").unlink()
    assert set(available_profiles([tmp_path])) == {"two"}
    with pytest.raises(InvalidRequest, match="profile 'one' is unknown"):
        load_profile("one", [tmp_path])


def test_a_file_made_unreadable_is_refused_again(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file; the unprivileged CI user runs this")
    path = tmp_path / "site.toml"
    write(path, "readable")
    load_profile("site", [tmp_path])
    path.chmod(0)
    try:
        with pytest.raises(InvalidRequest, match="cannot be read"):
            load_profile("site", [tmp_path])
    finally:
        path.chmod(0o600)
