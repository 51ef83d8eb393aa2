"""``hpc-magics convert`` and ``jupyter nbconvert --to hpc_script``, as users run them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from hpc_magics.scheduler import commands

from .conftest import NOTEBOOKS, VENV_BIN, headless_env, notebook

if TYPE_CHECKING:
    from conftest import SacctState, SlurmCluster

TIMEOUT_S = 120


def hpc_magics(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "hpc-magics"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
                          env=headless_env(None))


def test_convert_writes_script_and_sbatch_from_notebook_metadata(tmp_path: Path) -> None:
    done = hpc_magics("convert", NOTEBOOKS / "training_loop.ipynb", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "training_loop.py (9 display statements removed)" in done.stdout
    sbatch = (tmp_path / "out" / "training_loop.sbatch").read_text()
    assert sbatch.splitlines()[:6] == [
        "#!/bin/bash",
        "#SBATCH --job-name=training_loop",
        "#SBATCH --partition=debug",
        "#SBATCH --time=00:15:00",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=2000M",
    ]
    assert "over profile 'lab'" in sbatch
    assert "\necho setting up\n" in sbatch
    assert sbatch.rstrip().endswith("export MPLBACKEND=Agg\npython training_loop.py")


def test_profile_option_interpreter_and_hostile_names(tmp_path: Path) -> None:
    folder = tmp_path / "my 'workshop' folder"
    folder.mkdir()
    nb_path = folder / "day 1: it's plots.ipynb"
    nbformat.write(notebook("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
                            "print('computed', 6 * 7)"), nb_path)
    done = hpc_magics("convert", nb_path, "--profile", "daint", "--python", "python3 -u")
    assert done.returncode == 0, done.stderr
    sbatch_path = folder / "day 1: it's plots.sbatch"
    sbatch = sbatch_path.read_text()
    assert sbatch.startswith("#!/bin/bash -l\n#SBATCH --job-name=day_1_it_s_plots\n")
    # Daint wants a project: said, not hidden (a warning: Slurm charges the default account)
    assert "# warning: no -A/--account" in sbatch
    # The sbatch file is a bash script: run it here, as the node would.
    env = headless_env(None)
    ran = subprocess.run(["bash", str(sbatch_path)], cwd=folder, capture_output=True, text=True,
                         timeout=TIMEOUT_S, env=env, check=False)
    assert ran.returncode == 0, ran.stderr
    assert "computed 42" in ran.stdout


def test_errors_are_one_line_with_the_fix(tmp_path: Path) -> None:
    missing = hpc_magics("convert", tmp_path / "absent.ipynb")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "no such notebook" in missing.stderr
    nb_path = tmp_path / "nb.ipynb"
    nbformat.write(notebook("x = 1"), nb_path)
    unknown = hpc_magics("convert", nb_path, "--profile", "nowhere")
    assert unknown.returncode == 2 and "profile 'nowhere' is unknown: use one of" in unknown.stderr
    broken = tmp_path / "broken.ipynb"
    nbformat.write(notebook("x = (1,"), broken)
    bad = hpc_magics("convert", broken, "--strict")
    assert bad.returncode == 2 and "cell 1 is not valid Python" in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "broken.ipynb" in bad.stderr
    lenient = hpc_magics("convert", broken)
    assert lenient.returncode == 0, lenient.stderr
    assert "warning:" in lenient.stderr and "cell 1 is not valid Python" in lenient.stderr
    assert "# [not python] x = (1," in (tmp_path / "broken.py").read_text()
    not_notebook = tmp_path / "notes.ipynb"
    not_notebook.write_text("{not json")
    invalid = hpc_magics("convert", not_notebook)
    assert invalid.returncode == 2 and "is not a notebook" in invalid.stderr


def test_nbconvert_entry_point_matches_the_command(tmp_path: Path) -> None:
    for name in ("weather_pandas", "training_loop", "image_shell"):
        shutil.copy(NOTEBOOKS / f"{name}.ipynb", tmp_path)
        exported = subprocess.run(
            [str(VENV_BIN / "jupyter"), "nbconvert", "--to", "hpc_script", f"{name}.ipynb",
             "--output-dir", "nbconvert"], cwd=tmp_path, capture_output=True, text=True,
            timeout=TIMEOUT_S, env=headless_env(None), check=False)
        assert exported.returncode == 0, exported.stderr
        done = hpc_magics("convert", f"{name}.ipynb", "-o", "cli", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "nbconvert" / f"{name}.py").read_text() == \
            (tmp_path / "cli" / f"{name}.py").read_text()


def test_nbconvert_strict_refuses_a_cell_that_is_not_python(tmp_path: Path) -> None:
    nbformat.write(notebook("x = 1", "x = (1,"), tmp_path / "broken.ipynb")

    def export(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(VENV_BIN / "jupyter"), "nbconvert", "--to", "hpc_script", "broken.ipynb",
             *options], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT_S,
            env=headless_env(None), check=False)

    lenient = export()
    assert lenient.returncode == 0 and "cell 2 is not valid Python" in lenient.stderr
    strict = export("--HpcScriptExporter.strict=True")
    assert strict.returncode != 0 and "cell 2 is not valid Python" in strict.stderr


def test_help_lists_the_convert_command() -> None:
    done = subprocess.run([sys.executable, "-m", "hpc_magics.cli", "convert", "--help"],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0 and "--profile" in done.stdout and "--output-dir" in done.stdout


def test_converted_notebook_runs_as_a_slurm_job(slurm_cluster: SlurmCluster,
                                                sacct_state: SacctState, tmp_path: Path) -> None:
    shutil.copy(NOTEBOOKS / "training_loop.ipynb", tmp_path)
    done = hpc_magics("convert", tmp_path / "training_loop.ipynb", "--python", sys.executable)
    assert done.returncode == 0, done.stderr
    submitted = commands.run(["sbatch", f"--chdir={tmp_path}", "--wait", "-o", "job.out",
                              str(tmp_path / "training_loop.sbatch")], timeout=TIMEOUT_S)
    assert submitted.ok, submitted.first_error_line()
    job_id = submitted.stdout.split()[-1]
    assert sacct_state(job_id, until={"COMPLETED", "FAILED"}) == "COMPLETED", (
        (tmp_path / "job.out").read_text())
    log = (tmp_path / "job.out").read_text()
    assert "setting up" in log and "final loss" in log
    assert (tmp_path / "results.json").exists() and (tmp_path / "loss_curve.png").exists()
