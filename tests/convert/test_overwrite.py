"""``hpc-magics convert`` never replaces a NAME.py or NAME.sbatch that differs from what it
would write (the user may have edited it) unless ``--force``: one line, nothing written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import nbformat
import pytest

from hpc_magics.cli import main as cli_main

from .conftest import notebook


def test_convert_refuses_to_replace_an_edited_file_unless_forced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "train.ipynb"
    nbformat.write(notebook("print(6 * 7)"), source)
    script, sbatch = tmp_path / "train.py", tmp_path / "train.sbatch"
    assert cli_main(["convert", str(source)]) == 0
    assert cli_main(["convert", str(source)]) == 0  # the same files again: nothing to lose
    script.write_text(script.read_text() + "print('my own line')\n")
    sbatch_before = sbatch.read_text()
    capsys.readouterr()

    assert cli_main(["convert", str(source), "-t", "30"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1, said
    assert f"{script} exists and differs from this conversion" in said and "--force" in said
    assert "my own line" in script.read_text() and sbatch.read_text() == sbatch_before

    assert cli_main(["convert", str(source), "-t", "30", "--force"]) == 0
    assert "my own line" not in script.read_text()
    assert "#SBATCH --time=00:30:00" in sbatch.read_text()


def test_convert_writes_whole_files_the_umask_opens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files are the user's, in their project folder: their umask decides who reads them
    (the job folders' 0600 would hide a script from the project's group), and a write cut
    short leaves the file before it, never half a script."""
    source = tmp_path / "train.ipynb"
    nbformat.write(notebook("print(6 * 7)"), source)
    previous = os.umask(0o022)
    try:
        assert cli_main(["convert", str(source)]) == 0
    finally:
        os.umask(previous)
    script, sbatch = tmp_path / "train.py", tmp_path / "train.sbatch"
    assert stat.S_IMODE(script.stat().st_mode) == 0o644
    assert stat.S_IMODE(sbatch.stat().st_mode) == 0o644

    before = script.read_text()

    def cut_short(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", cut_short)
    with pytest.raises(OSError):
        cli_main(["convert", str(source), "-t", "30", "--force"])
    assert script.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.ipynb", "train.py",
                                                          "train.sbatch"]
