"""A whole-notebook job carries the world of the kernel the notebook names, not the modules
of the process that submits it (core/notebook_world.py), on the real test cluster with
Debian's Lmod and a clean-environment site default (``SBATCH_EXPORT=NONE``).

The submitting process has module ``here/1.0`` loaded; two real kernelspecs in the user's
kernels folder (which a clean job's node finds through HOME) name the module ``envtest/1.0``
two ways: in their ``env`` (as a site's "kernel from modules" tool writes it), and as an
``argv`` that loads it itself (``bash -c "module load ... && exec python -m
ipykernel_launcher ..."``). Each notebook imports a package only the kernel's venv has.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_kernel_world_on_cluster import (
    LMOD_INIT,
    _environment_after_module_load,
    _notebook,
    _venv_with_a_package,
    project,  # noqa: F401 (the fixture)
)

CELL = """import json, os, sys, envworld_probe
print(json.dumps({"package": envworld_probe.NAME, "python": sys.executable,
                  "module": os.environ.get("ENVWORLD_MODULE_VAR"),
                  "here": os.environ.get("ENVWORLD_HERE_VAR")}))"""


@pytest.fixture
def kernels_folder() -> Iterator[tuple[Path, str]]:
    """The user's own kernelspec folder, and a random prefix for this test's kernels
    (removed after)."""
    folder = Path.home() / ".local" / "share" / "jupyter" / "kernels"
    prefix = f"hpcm-envworld-{secrets.token_hex(3)}"
    try:
        yield folder, prefix
    finally:
        for made in folder.glob(f"{prefix}-*"):
            shutil.rmtree(made, ignore_errors=True)


def _kernelspec(folder: Path, name: str, argv: list[str], env: dict[str, str]) -> str:
    (folder / name).mkdir(parents=True)
    (folder / name / "kernel.json").write_text(json.dumps(
        {"argv": argv, "env": env, "display_name": name, "language": "python"}))
    return name


def test_a_notebook_job_loads_its_kernels_modules_not_the_submitters(
        slurm_cluster: Any, project: Path, kernels_folder: tuple[Path, str],  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not LMOD_INIT.exists():
        pytest.skip("Lmod is not installed here (Debian: apt-get install lmod)")
    import nbformat

    from hpc_magics.convert.notebook_job import NOTEBOOK_OUT
    from hpc_magics.core.profiles import load_profile
    from hpc_magics.core.resources import ResourceRequest
    from hpc_magics.notebook_submit import dry_run, submit_notebook

    venv = _venv_with_a_package(project)
    python = str(venv / "bin" / "python")
    kernel_modules = _environment_after_module_load(project)  # envtest/1.0, for the kernels
    for name, value in _environment_after_module_load(project, "here",
                                                      "ENVWORLD_HERE_VAR").items():
        monkeypatch.setenv(name, value)  # this process: module here/1.0 loaded
    monkeypatch.setenv("SBATCH_EXPORT", "NONE")  # the site's clean-environment default
    folder, prefix = kernels_folder
    by_env = _kernelspec(folder, f"{prefix}-env", [
        python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        {k: kernel_modules[k] for k in ("LOADEDMODULES", "_LMFILES_", "MODULEPATH")})
    by_argv = _kernelspec(folder, f"{prefix}-argv", [
        "bash", "-c", '. "$1" && module use "$2" && module load envtest/1.0 && '
        'exec "$3" -m ipykernel_launcher -f "$4"', "-", str(LMOD_INIT),
        str(project / "modulefiles"), python, "{connection_file}"], {})
    request = ResourceRequest(profile="lab", backend="slurm", time_s=300)
    lab = load_profile("lab")
    books = {kernel: _notebook(project / f"{kernel}.ipynb", kernel, CELL)
             for kernel in (by_env, by_argv)}
    # the clean job has no PYTHONPATH: the venv's Python (with this checkout) runs the notebook
    monkeypatch.setenv("HPC_MAGICS_PYTHON", python)
    scripts = {kernel: dry_run(path, request, lab, jobs_root=project / "jobs").script
               for kernel, path in books.items()}
    not_here = ("# the notebook's world: modules loaded here (here/1.0) are not loaded for the "
                "notebook's kernel: name those it needs in the notebook's metadata "
                "hpc_magics.environment.modules\n")
    assert "module load envtest/1.0\n" in scripts[by_env]
    assert f"export MODULEPATH={project / 'modulefiles'}" in scripts[by_env]
    assert f"export VIRTUAL_ENV={venv}\n" in scripts[by_env]  # found from the kernel's python
    assert "\nmodule load" not in scripts[by_argv]  # its argv loads them on the node
    assert "# the notebook's world: the kernel's argv sets up its own world" in scripts[by_argv]
    for script in scripts.values():
        assert "here/1.0" not in script.replace(not_here, "")
        assert not_here in script

    jobs = {kernel: submit_notebook(path, request, lab, jobs_root=project / "jobs")
            for kernel, path in books.items()}
    for kernel, handle in jobs.items():
        assert handle.wait(timeout=240) == "COMPLETED", handle.log(tail=20)
        executed = nbformat.read(handle.folder.path / NOTEBOOK_OUT, as_version=4)
        [output] = executed.cells[0].outputs
        assert json.loads(output.text) == {"package": "venv-only", "python": python,
                                           "module": "loaded", "here": None}, kernel


def test_submit_dry_run_prints_the_script_and_submits_nothing(
        slurm_cluster: Any, project: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    from hpc_magics.cli import main

    path = _notebook(project / "look.ipynb", "python3", "x = 1")
    assert main(["submit", str(path), "--profile", "lab", "--backend", "slurm", "-t", "5",
                 "--jobs-dir", str(project / "jobs"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# dry run: nothing submitted. The job folder would be "
                          f"{project / 'jobs'}/look-YYYYMMDD-HHMMSS-XXXX (")
    assert "submission).\n#!/bin/bash\n" in out
    assert "# the job runs the notebook look.ipynb (1 cell, kernel python3)" in out
    assert re.search(r"^# the notebook's world: kernel 'python3': \S*python\S* -m "
                     "ipykernel_launcher", out, re.M), out
    assert "#SBATCH --time=00:05:00" in out
    assert not (project / "jobs").exists()
