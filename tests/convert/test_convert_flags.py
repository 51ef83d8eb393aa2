"""``hpc-magics convert`` takes sbatch's flags (the one flags table) and says the request's
problems on the console, not only inside the .sbatch file; the notebook's metadata may spell
the request as a person types it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from hpc_magics.cli import main

from .conftest import notebook

LAB_METADATA = {"hpc_magics": {"resources": {"profile": "lab", "partition": "debug",
                                             "time_s": 900, "cpus_per_task": 2}}}


def header(sbatch: Path) -> list[str]:
    return [line for line in sbatch.read_text().splitlines() if line.startswith("#SBATCH")]


def test_flags_go_over_the_notebooks_metadata(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    nbformat.write(notebook("print('trained')", metadata=LAB_METADATA), tmp_path / "nb.ipynb")
    status = main(["convert", str(tmp_path / "nb.ipynb"), "-t", "5", "--mem", "1G",
                   "--setup", "module load numpy"])
    assert status == 0
    assert capsys.readouterr().err == ""
    sbatch = tmp_path / "nb.sbatch"
    assert header(sbatch) == ["#SBATCH --job-name=nb", "#SBATCH --partition=debug",
                              "#SBATCH --time=00:05:00", "#SBATCH --cpus-per-task=2",
                              "#SBATCH --mem=1G"]
    text = sbatch.read_text()
    assert "# Resources: the command line over the notebook's metadata" in text
    assert "\nmodule load numpy\n" in text


def test_a_request_the_cluster_refuses_is_said_on_the_console(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nbformat.write(notebook("x = 1"), tmp_path / "nb.ipynb")
    status = main(["convert", str(tmp_path / "nb.ipynb"), "--profile", "lab", "-t", "50"])
    err = capsys.readouterr().err
    assert status == 1
    assert err == ("nb.sbatch: error: time 00:50:00 exceeds the 00:20:00 limit of partition "
                   "'debug': ask for less or choose a longer partition\n")
    # still written, with the same note, so it can be fixed in the file
    assert "# error: time 00:50:00 exceeds" in (tmp_path / "nb.sbatch").read_text()


def test_a_value_that_does_not_parse_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nbformat.write(notebook("x = 1"), tmp_path / "nb.ipynb")
    status = main(["convert", str(tmp_path / "nb.ipynb"), "--profile", "lab", "--mem", "lots"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "'lots'" in err
    assert not (tmp_path / "nb.sbatch").exists() and not (tmp_path / "nb.py").exists()


def test_metadata_typed_by_hand_with_sbatchs_names(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    by_hand = {"hpc_magics": {"resources": {"profile": "lab", "time": "2h", "partition": "long",
                                            "cpus-per-task": "2", "mem": "1G",
                                            "setup": "module load numpy"}}}
    nbformat.write(notebook("x = 1", metadata=by_hand), tmp_path / "nb.ipynb")
    assert main(["convert", str(tmp_path / "nb.ipynb")]) == 0, capsys.readouterr().err
    sbatch = tmp_path / "nb.sbatch"
    assert header(sbatch) == ["#SBATCH --job-name=nb", "#SBATCH --partition=long",
                              "#SBATCH --time=02:00:00", "#SBATCH --cpus-per-task=2",
                              "#SBATCH --mem=1G"]
    assert "\nmodule load numpy\n" in sbatch.read_text()


@pytest.mark.parametrize(("resources", "named"), [
    ({"tme": "2h"}, "'tme' is not a resource: use sbatch's flag names"),
    ({"cpus_per_task": "-2"}, "--cpus-per-task '-2' must be a whole number"),
    ({"time": "soon"}, "time 'soon' is not understood"),
])
def test_metadata_that_does_not_read_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], resources: dict[str, str],
        named: str) -> None:
    metadata = {"hpc_magics": {"resources": {"profile": "lab", **resources}}}
    nbformat.write(notebook("x = 1", metadata=metadata), tmp_path / "nb.ipynb")
    assert main(["convert", str(tmp_path / "nb.ipynb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "notebook metadata hpc_magics.resources: " in err
    assert named in err
    assert not (tmp_path / "nb.sbatch").exists()


def test_several_tasks_are_said_to_run_the_script_once(tmp_path: Path) -> None:
    nbformat.write(notebook("x = 1"), tmp_path / "nb.ipynb")
    assert main(["convert", str(tmp_path / "nb.ipynb"), "--profile", "lab", "-t", "5",
                 "-N", "2", "--ntasks-per-node", "2"]) == 0
    text = (tmp_path / "nb.sbatch").read_text()
    assert ("# 4 tasks asked, but the script runs once, on the first node;\n"
            "# `srun python nb.py` runs one copy per task") in text
    assert text.rstrip().endswith("\npython nb.py")  # unchanged: the reader decides
    assert main(["convert", str(tmp_path / "nb.ipynb"), "--profile", "lab", "-t", "5",
                 "--force"]) == 0  # its own earlier output, replaced on purpose
    assert "tasks asked" not in (tmp_path / "nb.sbatch").read_text()
