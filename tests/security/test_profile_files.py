"""Shell lines from profile files (``setup``, and the commands a profile names) run as the
user: the dry run shows them under the file they came from, and a site or user profile
file that another user could have written is refused in one line, its lines never used."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.cli import main as cli_main

from .conftest import Intruder

pytestmark = [pytest.mark.timeout(120), pytest.mark.slurm]

SITE_PROFILE = ('extends = "lab"\nsetup = ["echo set-up-by-the-profile-file"]\n'
                'balance_command = ["echo", "balance-by-the-profile-file"]\n')


def dry_run(shell: Any, capsys: pytest.CaptureFixture[str], line: str = "") -> str:
    shell.run_cell_magic("sbatch", f"--profile mysite --dry-run {line}", "x = 1")
    return capsys.readouterr().out


def own_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int = 0o644) -> Path:
    """``mysite.toml`` in a folder of the user's, first on the profile path."""
    folder = tmp_path / "profiles"
    folder.mkdir(mode=0o755)
    path = folder / "mysite.toml"
    path.write_text(SITE_PROFILE)
    path.chmod(mode)
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(folder))
    return path


def test_a_profile_files_setup_shows_in_the_dry_run_under_its_file(
        shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], slurm_cluster: object) -> None:
    path = own_profile(tmp_path, monkeypatch)
    shown = dry_run(shell, capsys, "--setup 'echo mine'")
    assert f"# Setup from profile mysite: {path}\necho set-up-by-the-profile-file\n" in shown
    assert ("# Setup from the request (--setup, %hpc_resources or the notebook's metadata)\n"
            "echo mine\n") in shown
    assert (f"#   allocation command: echo balance-by-the-profile-file (profile mysite: "
            f"{path})\n") in shown


def refused(shell: Any, capsys: pytest.CaptureFixture[str], said: str) -> None:
    with pytest.raises(UsageError, match=said) as raised:
        dry_run(shell, capsys)
    assert "\n" not in str(raised.value)
    assert "set-up-by-the-profile-file" not in capsys.readouterr().out


def test_a_profile_file_another_user_could_write_is_refused(
        shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], intruder: Intruder, shared_folder: Path) -> None:
    # theirs, in a folder both may write (sticky, as /tmp: neither replaces the other's)
    theirs = shared_folder / "mysite.toml"
    intruder.run("sh", "-c", 'umask 022 && printf %s "$1" > "$2"', "sh", SITE_PROFILE,
                 str(theirs))
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(shared_folder))
    refused(shell, capsys, f"profile file {re.escape(str(theirs))} is not used: it is owned by "
                           f"{intruder.name}, .*chmod go-w")

    # ours, but the group may write it
    ours = own_profile(tmp_path, monkeypatch, mode=0o664)
    folder = ours.parent
    refused(shell, capsys,
            f"profile file {re.escape(str(ours))} is not used: it is writable by others")
    assert cli_main(["profiles"]) == 0  # the list says so, and lists the others
    listed = capsys.readouterr().out
    assert re.search(r"^mysite +not usable: profile file .* writable by others", listed, re.M)
    assert re.search(r"^lab +\S", listed, re.M)

    # ours, in a folder the group may write (the file could be replaced)
    ours.chmod(0o644)
    folder.chmod(0o775)
    refused(shell, capsys, f"its folder {re.escape(str(folder))} is writable by others")

    folder.chmod(0o755)  # and once it is the user's alone, it is used
    assert "echo set-up-by-the-profile-file" in dry_run(shell, capsys)


NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [],
               "execution_count": None}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"},
                 "hpc_magics": {"resources": {"profile": "lab",
                                              "setup": ["echo set-up-by-the-notebook"]}}},
    "nbformat": 4, "nbformat_minor": 5})


def test_a_notebooks_setup_lines_run_only_from_a_file_of_the_users_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], intruder: Intruder,
        shared_folder: Path) -> None:
    theirs = shared_folder / "shared.ipynb"
    intruder.run("sh", "-c", 'umask 022 && printf %s "$1" > "$2"', "sh", NOTEBOOK, str(theirs))
    assert cli_main(["submit", str(theirs), "--dry-run"]) == 2
    said = capsys.readouterr()
    assert re.fullmatch(f"hpc-magics submit: notebook {re.escape(str(theirs))}: its "
                        "metadata's setup lines .* not used: it is owned by "
                        f"{intruder.name}:[^\n]*\n", said.err), said.err
    assert "set-up-by-the-notebook" not in said.out

    folder = tmp_path / "notebooks"
    folder.mkdir(mode=0o755)
    mine = folder / "mine.ipynb"  # the user's own copy, read before use
    mine.write_text(NOTEBOOK)
    assert cli_main(["submit", str(mine), "--dry-run"]) == 0
    assert ("# Setup from the request (--setup, %hpc_resources or the notebook's metadata)\n"
            "echo set-up-by-the-notebook\n") in capsys.readouterr().out
