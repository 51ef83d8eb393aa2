"""The notebook's kernel's world in rendered scripts (core/notebook_world.py): modules from
the notebook's metadata or the kernelspec's env, a venv or conda environment found from the
kernel's interpreter, never the submitting process's modules; ``hpc-magics convert`` of a
notebook with a real kernelspec. The same runs on the cluster in
tests/magics/test_notebook_world_on_cluster.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpc_magics.convert.command import convert_file
from hpc_magics.core import kernel_world
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.notebook_world import kernel_of, notebook_parts

HERE = {"LOADEDMODULES": "gcc/12:python/3.11", "_LMFILES_": "/apps/m/gcc/12.lua:/apps/m/p.lua",
        "LMOD_PKG": "/usr/share/lmod/lmod", "MODULEPATH": "/apps/m"}
ARGV = ["/proj/envs/ml/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def lines(kernel_env: dict[str, str], metadata: dict[str, object], clean: bool,
          argv: list[str] = ARGV) -> list[str]:
    kernel = kernel_of("ml", argv, kernel_env, HERE, metadata)
    here = kernel_world.read(HERE, "/usr/bin/python3")
    return list(notebook_parts(kernel, here, {}, clean, driver="/usr/bin/python3").lines)


def test_the_notebooks_metadata_names_the_kernels_modules() -> None:
    metadata = {"hpc_magics": {"environment": {"modules": ["PyTorch/2.1"]}}}
    rendered = lines({}, metadata, clean=False)
    assert "module load PyTorch/2.1" in rendered
    assert not any(line.startswith("module load") and "gcc" in line for line in rendered)
    assert ("# the notebook's world: modules loaded here (gcc/12 python/3.11) are not loaded "
            "for the notebook's kernel, though sbatch's --export=ALL passes their environment "
            "on: name those it needs in the notebook's metadata hpc_magics.environment.modules"
            ) in rendered
    assert "export SLURM_EXPORT_ENV=ALL" not in rendered


def test_the_kernelspecs_env_names_them_and_a_clean_job_loads_them() -> None:
    rendered = lines({"LOADEDMODULES": "python/3.11", "_LMFILES_": "/apps/m/p.lua",
                      "MODULEPATH": "/apps/m:/home/u/mods"}, {}, clean=True)
    assert rendered[-4:] == [
        "command -v module >/dev/null 2>&1 || . /usr/share/lmod/lmod/init/bash",
        "export MODULEPATH=/apps/m:/home/u/mods", "module load python/3.11",
        "export SLURM_EXPORT_ENV=ALL"], rendered
    assert "# the notebook's world: modules loaded here (gcc/12) are not loaded for the " \
           "notebook's kernel: name those it needs in the notebook's metadata " \
           "hpc_magics.environment.modules" in rendered


def test_a_conda_environment_is_found_from_the_kernels_interpreter(tmp_path: Path) -> None:
    prefix = tmp_path / "envs" / "ml"
    (prefix / "conda-meta").mkdir(parents=True)
    rendered = lines({}, {}, clean=True, argv=[str(prefix / "bin" / "python"), "-m",
                                               "ipykernel_launcher"])
    assert f"export CONDA_PREFIX={prefix}" in rendered
    assert 'export PATH="$CONDA_PREFIX/bin:$PATH"' in rendered


def test_a_kernel_whose_argv_loads_its_modules_gets_none_from_the_job() -> None:
    argv = ["bash", "-lc", "module load python/3.11 && exec python -m ipykernel_launcher "
            "-f {connection_file}"]
    rendered = lines({"LOADEDMODULES": "python/3.11"}, {}, clean=True, argv=argv)
    assert not any(line.startswith("module load") for line in rendered)
    assert "# the notebook's world: the kernel's argv sets up its own world (as it does here)" \
        in rendered


def test_bad_environment_metadata_is_one_line_naming_it() -> None:
    with pytest.raises(InvalidRequest, match=r"^notebook metadata hpc_magics.environment "
                       r"\{'interpreter': 'x'\}: a mapping of modules, uenv, container"):
        lines({}, {"hpc_magics": {"environment": {"interpreter": "x"}}}, clean=False)


def test_convert_writes_the_kernels_interpreter_and_modules_not_this_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat

    venv = tmp_path / "home" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    kernels = tmp_path / "jupyter" / "kernels" / "mlkernel"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "ml", "language": "python",
        "env": {"LOADEDMODULES": "cuda/12", "_LMFILES_": "/apps/m/cuda/12.lua"}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    for name, value in HERE.items():
        monkeypatch.setenv(name, value)
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    book.metadata["kernelspec"] = {"name": "mlkernel", "display_name": "ml"}
    nbformat.write(book, tmp_path / "train.ipynb")
    written = convert_file(tmp_path / "train.ipynb", tmp_path / "out")
    sbatch = written.sbatch.read_text()
    assert "\nmodule load cuda/12\n" in sbatch
    assert f"\nexport VIRTUAL_ENV={venv}\n" in sbatch
    assert sbatch.rstrip().endswith(f"\n{venv / 'bin' / 'python'} train.py")
    assert "gcc/12 python/3.11) are not loaded" in sbatch
    # a notebook whose kernel is not installed here: python from the job's PATH, said so
    book.metadata["kernelspec"] = {"name": "nosuch", "display_name": "x"}
    nbformat.write(book, tmp_path / "other.ipynb")
    other = convert_file(tmp_path / "other.ipynb", tmp_path / "out").sbatch.read_text()
    assert other.rstrip().endswith("\npython other.py")
    assert "# so the script runs `python` from the job's PATH" in other


def test_the_image_this_process_runs_in_is_the_notebook_jobs_too() -> None:
    kernel = kernel_of("ml", ARGV, {}, {**HERE, "APPTAINER_CONTAINER": "/proj/img/torch.sif"},
                       {})
    made = notebook_parts(kernel, kernel_world.read(HERE, "/usr/bin/python3"), {}, False,
                          driver="/usr/bin/python3")
    assert made.python == "apptainer exec /proj/img/torch.sif /usr/bin/python3"
