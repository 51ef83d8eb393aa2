"""``hpc-magics convert`` never replaces a NAME.py or NAME.sbatch that differs from what it
would write (the user may have edited it) unless ``--force``: one line, nothing written."""

from __future__ import annotations

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
