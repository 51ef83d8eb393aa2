"""The kernel's world reaches the job on the real test cluster (issue 20): a kernel in a venv
with a package installed only there and an Lmod module loaded, with ``SBATCH_EXPORT=NONE``
set as a clean-environment site default would be, and an account default from
``SBATCH_ACCOUNT``. The cell on the node sees the venv's package, the kernel's interpreter
and the module's variable, with no extra line in the cell, and is billed to that account.

The "kernel" is this test's IPython shell: its interpreter (``sys.executable``) and
environment are set as a kernel started in that venv after ``module load`` would have them.
Also here: a whole-notebook job on the notebook's own kernelspec, a clean job with nothing of
the kernel's world to set up, a shipped module the job cannot import (one line), and a
kernel in a conda environment (skipped where no conda tool can make one offline).
"""

from __future__ import annotations

import getpass
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hpc_magics.scheduler import commands

if TYPE_CHECKING:  # fixture types only
    from conftest import SacctState, ThrowawayAccount

LMOD_INIT = Path("/etc/profile.d/lmod.sh")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project() -> Iterator[Path]:
    """A project folder in the home directory: compute nodes see it, unlike /tmp."""
    folder = Path(tempfile.mkdtemp(prefix=".hpc-magics-envworld-", dir=Path.home()))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _venv_with_a_package(project: Path) -> Path:
    venv = project / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True, timeout=120)
    _add_the_probe_and_this_checkout(venv)
    return venv


def _add_the_probe_and_this_checkout(prefix: Path) -> None:
    [site] = list(prefix.glob("lib/python*/site-packages"))
    (site / "envworld_probe").mkdir()  # the package only this environment has
    (site / "envworld_probe" / "__init__.py").write_text("NAME = 'venv-only'\n")
    # hpc_magics and its dependencies, as a user's venv would have them installed: this
    # checkout first, then the test environment's packages (plain path lines, so that
    # environment's own editable install of another checkout is not picked up)
    (site / "hpc_magics_checkout.pth").write_text(
        f"{REPO}\n{sysconfig.get_paths()['purelib']}\n")


def _environment_after_module_load(project: Path, name: str = "envtest",
                                   variable: str = "ENVWORLD_MODULE_VAR") -> dict[str, str]:
    """A modulefile NAME/1.0 in the project (it sets ``variable`` and puts the project's
    tools/ on PATH), and the module variables of a shell after ``module load NAME/1.0``."""
    modules = project / "modulefiles"
    (modules / name).mkdir(parents=True)
    (project / "tools").mkdir(exist_ok=True)
    (modules / name / "1.0.lua").write_text(
        f'setenv("{variable}", "loaded")\n'
        f'prepend_path("PATH", "{project / "tools"}")\n')
    shown = subprocess.run(
        ["bash", "-c", '. "$1" && module use "$2" && module load "$3/1.0" && env -0', "-",
         str(LMOD_INIT), str(modules), name],
        capture_output=True, text=True, timeout=60, check=True,
        env={"HOME": str(Path.home()), "PATH": "/usr/bin:/bin", "LMOD_ALLOW_ROOT_USE": "yes"})
    env = dict(item.split("=", 1) for item in shown.stdout.split("\0") if "=" in item)
    return {k: env[k] for k in ("LOADEDMODULES", "_LMFILES_", "MODULEPATH", "LMOD_PKG",
                                 variable)}


CELL = """import os, sys
from envworld_probe import NAME
env = os.environ
seen = {"package": NAME, "python": sys.executable, "module": env.get("ENVWORLD_MODULE_VAR"),
        "path": env.get("PATH", "").split(":")[:2], "venv": env.get("VIRTUAL_ENV"),
        "kernel_only": env.get("ENVWORLD_KERNEL_ONLY")}
"""


def test_done_when_a_new_user_runs_a_cell_in_their_world_billed_to_their_default(
        shell: Any, slurm_cluster: Any, project: Path, throwaway_account: ThrowawayAccount,
        sacct_state: SacctState, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20's "Done when", as a new user tries it: a clean-environment site default, a
    kernel in a home venv with a package only it has, an Lmod module loaded, and an account
    default in the shell's start-up; the cell has no extra line."""
    if not LMOD_INIT.exists():
        pytest.skip("Lmod is not installed here (Debian: apt-get install lmod)")
    # an account that is not this user's Slurm default: only SBATCH_ACCOUNT can pick it
    account = throwaway_account("hpcm_test_envworld", getpass.getuser())
    venv = _venv_with_a_package(project)
    for name, value in _environment_after_module_load(project).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    monkeypatch.setenv("SBATCH_EXPORT", "NONE")  # the site's clean-environment default
    monkeypatch.setenv("SBATCH_ACCOUNT", account)  # the user's default, as the Alliance says
    monkeypatch.setenv("ENVWORLD_KERNEL_ONLY", "1")  # a clean job must not see it
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")

    shell.run_cell_magic("sbatch", "--dry-run", CELL)
    shown = capsys.readouterr().out
    # the lines, and where each value came from
    assert f"#SBATCH --account={account}\n" in shown
    assert "#   --account: environment (SBATCH_ACCOUNT)" in shown
    assert "#   --time: %hpc_resources" in shown
    assert "module load envtest/1.0\n" in shown
    assert f"export MODULEPATH={project / 'modulefiles'}" in shown
    assert f"export VIRTUAL_ENV={venv}\n" in shown
    assert "export SLURM_EXPORT_ENV=ALL\n" in shown  # srun does not start the cell clean again
    assert f"# the kernel's world: venv: {venv} (first on PATH in the job)" in shown
    assert f"{venv / 'bin' / 'python'} -u -m hpc_magics.node.engine" in shown

    shell.run_cell_magic("sbatch", "--wait --name kernel-world", CELL)
    seen = shell.user_ns["seen"]
    assert seen == {"package": "venv-only", "python": str(venv / "bin" / "python"),
                    "module": "loaded", "venv": str(venv),
                    # the venv first, then the module's folder: as activating it after loading
                    "path": [str(venv / "bin"), str(project / "tools")],
                    "kernel_only": None}
    job_id = shell.magics_manager.registry["HpcMagicsKernel"].last_job
    assert f" Account={account} " in commands.run(
        ["scontrol", "show", "job", str(job_id)], timeout=20).stdout
    sacct_state(job_id, until={"COMPLETED"}, timeout=30)
    billed = commands.run(["sacct", "-n", "-X", "-P", "-o", "Account", "-j", str(job_id)],
                          timeout=20)
    assert billed.stdout.split() == [account]


def _notebook(path: Path, kernel: str, source: str) -> Path:
    import nbformat

    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    book.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nbformat.write(book, path)
    return path


def test_a_whole_notebook_job_runs_the_kernel_the_notebook_names(
        slurm_cluster: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import nbformat

    from hpc_magics.convert.notebook_job import NOTEBOOK_OUT
    from hpc_magics.core.errors import InvalidRequest
    from hpc_magics.core.profiles import load_profile
    from hpc_magics.core.resources import ResourceRequest
    from hpc_magics.notebook_submit import submit_notebook

    venv = _venv_with_a_package(project)
    kernels = project / "jupyter" / "kernels" / "envworld"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "envworld", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(project / "jupyter"))  # exported to the job
    request = ResourceRequest(profile="lab", backend="slurm", time_s=300)
    lab = load_profile("lab")
    with pytest.raises(InvalidRequest, match=r"^the notebook's kernel 'nosuch' is not installed"):
        submit_notebook(_notebook(project / "other.ipynb", "nosuch", "1"), request, lab,
                        jobs_root=project / "jobs")
    path = _notebook(project / "analysis.ipynb", "envworld",
                     "import sys, envworld_probe\nprint(envworld_probe.NAME, sys.executable)")
    handle = submit_notebook(path, request, lab, jobs_root=project / "jobs")
    assert handle.wait(timeout=240) == "COMPLETED"
    executed = nbformat.read(handle.folder.path / NOTEBOOK_OUT, as_version=4)
    [output] = executed.cells[0].outputs
    assert output.text.strip() == f"venv-only {venv / 'bin' / 'python'}"


def test_a_shipped_module_the_job_cannot_import_is_one_line_in_the_notebook(
        shell: Any, slurm_cluster: Any, project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a module only the kernel has: its folder (in the home, which nodes see) is on the
    # kernel's sys.path, not on the job's
    (project / "kernel_only_mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(project))
    shell.run_cell("import kernel_only_mod")
    monkeypatch.delitem(sys.modules, "kernel_only_mod")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    capsys.readouterr()
    ran = shell.run_cell("%%sbatch --wait\nv = kernel_only_mod.VALUE")
    assert ran.error_in_exec is not None
    shown = [line for line in capsys.readouterr().out.splitlines()
             if "JobWidget(" not in line and not line.startswith("[hpc_magics] shipping")]
    job_id = shell.magics_manager.registry["HpcMagicsKernel"].last_job
    [line] = shown  # one line, no runner frames
    assert re.fullmatch(
        rf"job {job_id} on (\S+): ShippedModuleMissing: the job's Python "
        rf"{re.escape(sys.executable)} on \1 cannot import 'kernel_only_mod', which the cell's "
        r"state needs \(No module named 'kernel_only_mod'\): install it in the environment "
        r"the job runs, or load its module in the kernel", line), line


def test_a_clean_job_with_nothing_of_the_kernels_world_to_set_up_still_runs(
        shell: Any, slurm_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # no venv, conda or module: srun must still not start the cell's step clean again
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "LOADEDMODULES", "_LMFILES_"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SBATCH_EXPORT", "NONE")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--wait --name clean-plain", "answer = 6 * 7")
    assert shell.user_ns["answer"] == 42


NO_CONDA = ("no conda, mamba or micromamba here to make a real conda environment: Debian 12 "
            "packages none of them, PyPI has no conda, and its conda-express (cx) bootstraps "
            "from conda.anaconda.org, which this machine cannot reach; the conda lines are "
            "checked in rendered scripts (tests/core/test_kernel_world.py::"
            "test_a_conda_environment_in_a_clean_job, tests/core/test_notebook_world.py)")


def test_a_kernel_in_a_conda_environment_reaches_a_clean_job(
        shell: Any, slurm_cluster: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = next(filter(None, map(shutil.which, ("micromamba", "mamba", "conda"))), None)
    if tool is None:
        pytest.skip(NO_CONDA)
    prefix = project / "conda-env"
    version = f"python={sys.version_info.major}.{sys.version_info.minor}"
    made = subprocess.run([tool, "create", "--yes", "--offline", "--prefix", str(prefix),
                           version], capture_output=True, text=True, timeout=600, check=False)
    if made.returncode != 0:  # nothing in its package cache: it would need the network
        pytest.skip(f"{tool} cannot make a {version} environment offline here: "
                    f"{(made.stderr or made.stdout).strip().splitlines()[-1:]}")
    _add_the_probe_and_this_checkout(prefix)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("CONDA_PREFIX", str(prefix))
    monkeypatch.setattr(sys, "executable", str(prefix / "bin" / "python"))
    monkeypatch.setenv("SBATCH_EXPORT", "NONE")
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell_magic("sbatch", "--wait --name conda-world",
                         "import os, sys\nfrom envworld_probe import NAME\n"
                         "seen = (NAME, sys.executable, os.environ.get('CONDA_PREFIX'), "
                         "os.environ['PATH'].split(':')[0])")
    assert shell.user_ns["seen"] == ("venv-only", str(prefix / "bin" / "python"), str(prefix),
                                     str(prefix / "bin"))
