"""The kernel's world in the rendered job script (core/kernel_world.py): interpreter, venv,
conda, modules, uenv, Apptainer; a profile turns each off or fixes it; preflight refuses
what a node cannot reach. Rendered scripts only: no uenv (a CSCS Alps plugin) and no
Apptainer image exists on the test cluster, so those two are checked as text here; the venv
and module cases also run for real in tests/magics/test_kernel_world_on_cluster.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.backends.submitit_backend import SlurmBackend
from hpc_magics.core import kernel_world
from hpc_magics.core.errors import InvalidRequest, refuse
from hpc_magics.core.profiles import ClusterProfile, load_profile
from hpc_magics.core.resources import ResourceRequest

VENV = "/home/u/project/venv"
PYTHON = f"{VENV}/bin/python"
MODULES = {"LOADEDMODULES": "gcc/12:PyTorch/2.1",
           "_LMFILES_": "/apps/m/gcc/12.lua:/apps/m/PyTorch/2.1.lua",
           "LMOD_PKG": "/usr/share/lmod/lmod", "MODULEPATH": "/apps/m:/home/u/mods"}


def script(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
           profile: ClusterProfile | None = None, python: str = PYTHON) -> str:
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "LOADEDMODULES", "_LMFILES_", "LMOD_PKG",
                 "MODULESHOME", "MODULEPATH", "UENV_MOUNT_LIST", "UENV_VIEW", "SBATCH_EXPORT",
                 "APPTAINER_CONTAINER", "SINGULARITY_CONTAINER", "HPC_MAGICS_PYTHON"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("sys.executable", python)
    return SlurmBackend().job_script("/home/u/jobs/j", ResourceRequest(profile="lab", time_s=60),
                                     profile or load_profile("lab"), "j")


def test_a_venv_travels_by_its_interpreter_and_is_put_first_on_path_in_a_clean_job(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inherited = script(monkeypatch, {"VIRTUAL_ENV": VENV})
    assert f" {PYTHON} -u -m hpc_magics.node.engine" in inherited
    assert "export VIRTUAL_ENV" not in inherited  # the environment travels with the job
    clean = script(monkeypatch, {"VIRTUAL_ENV": VENV, "SBATCH_EXPORT": "NONE"})
    assert (f"export VIRTUAL_ENV={VENV}\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n"
            "export SLURM_EXPORT_ENV=ALL\n") in clean
    assert f" {PYTHON} -u -m hpc_magics.node.engine" in clean


def test_a_conda_environment_in_a_clean_job(monkeypatch: pytest.MonkeyPatch) -> None:
    text = script(monkeypatch, {"CONDA_PREFIX": "/proj/envs/ml", "SBATCH_EXPORT": "NONE"},
                  python="/proj/envs/ml/bin/python")
    assert "export CONDA_PREFIX=/proj/envs/ml\nexport PATH=\"$CONDA_PREFIX/bin:$PATH\"" in text
    assert " /proj/envs/ml/bin/python -u -m hpc_magics" in text


def test_modules_are_loaded_again_when_the_job_starts_clean(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert "module load" not in script(monkeypatch, MODULES)  # exported with the environment
    text = script(monkeypatch, {**MODULES, "SBATCH_EXPORT": "NONE"})
    assert ("command -v module >/dev/null 2>&1 || . /usr/share/lmod/lmod/init/bash\n"
            "export MODULEPATH=/apps/m:/home/u/mods\n"
            "module load gcc/12 PyTorch/2.1\n"
            "export SLURM_EXPORT_ENV=ALL\n") in text
    # after umask, before the run line
    assert text.index("umask 077") < text.index("module load") < text.index("srun ")


def test_a_uenv_becomes_the_sites_uenv_and_view_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no uenv exists on the test cluster: the rendered lines are what is checked
    text = script(monkeypatch, {"UENV_MOUNT_LIST": "/capstor/u/store.squashfs:/user-environment",
                                "UENV_VIEW": "/user-environment:prgenv-gnu:default"},
                  profile=load_profile("daint"))
    assert "#SBATCH --uenv=/capstor/u/store.squashfs:/user-environment\n" in text
    assert "#SBATCH --view=prgenv-gnu:default\n" in text


def test_an_apptainer_image_runs_the_cell_in_the_same_image(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no Apptainer image exists on the test cluster: the rendered run line is checked
    text = script(monkeypatch, {"APPTAINER_CONTAINER": "/proj/images/torch.sif"},
                  python="/usr/bin/python3")
    assert " apptainer exec /proj/images/torch.sif /usr/bin/python3 -u -m hpc_magics" in text


def test_a_profile_turns_parts_off_or_fixes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    lab = load_profile("lab")
    fixed = ClusterProfile(**{**lab.__dict__, "environment": {
        "interpreter": "/apps/python/3.12/bin/python", "modules": ["Python/3.12"],
        "container": "off", "uenv": "off"}})
    text = script(monkeypatch, {**MODULES, "APPTAINER_CONTAINER": "/x.sif",
                                "UENV_MOUNT_LIST": "/s.squashfs:/user-environment"},
                  profile=fixed)
    assert " /apps/python/3.12/bin/python -u -m hpc_magics" in text
    assert "module load Python/3.12\n" in text and "gcc/12" not in text
    assert "apptainer" not in text and "--uenv" not in text


def test_preflight_refuses_what_a_node_cannot_reach(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world = kernel_world.read({"VIRTUAL_ENV": "/tmp/venv"}, "/tmp/venv/bin/python")
    with pytest.raises(InvalidRequest, match=r"^the kernel's interpreter /tmp/venv/bin/python "
                       r"is under /tmp, which compute nodes do not see: make it in your home"):
        refuse(kernel_world.refusals(world, {}))
    assert kernel_world.refusals(world, {"interpreter": "/apps/bin/python"}) == []  # the profile's
    # a one-host cluster (HPC_MAGICS_NODES_SHARE_TMP=1): its nodes see this /tmp
    assert kernel_world.refusals(world, {}, nodes_share_tmp=True) == []
    gone = kernel_world.read({"LOADEDMODULES": "old/1", "_LMFILES_": str(tmp_path / "old.lua")},
                             "/usr/bin/python3")
    assert kernel_world.refusals(gone, {}) == [
        f"module old/1 is not available any more ({tmp_path / 'old.lua'} is gone): module load "
        "it again in the kernel, or unload it"]


def test_a_bare_command_name_is_under_no_login_only_folder() -> None:
    assert kernel_world.login_only_root("python") is None  # found on the node's PATH
    assert kernel_world.login_only_root("/tmp/x/bin/python") == "/tmp"
    assert kernel_world.login_only_root("/home/u/venv/bin/python") is None
