"""The installed submitit and jupyter_server are the versions the package was tested with:
it uses private internals of submitit, and a new version must be tested before the bound
in pyproject.toml moves. The kernel's own dependencies bring no server."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml")
                          .read_text())["project"]


def _requirement(name: str, extra: str | None = None) -> Requirement:
    listed = PYPROJECT["optional-dependencies"][extra] if extra else PYPROJECT["dependencies"]
    return next(Requirement(text) for text in listed
                if re.split(r"[<>=!~;\[ ]", text, maxsplit=1)[0] == name)


@pytest.mark.parametrize(("name", "extra"), [("submitit", None), ("jupyter_server", "server")])
def test_installed_version_is_within_the_tested_bounds(name: str, extra: str | None) -> None:
    requirement = _requirement(name, extra)
    assert any(spec.operator == "<" for spec in requirement.specifier), \
        f"{name} needs an upper bound in pyproject.toml"
    installed = importlib.metadata.version(name)
    assert requirement.specifier.contains(installed), (
        f"{name} {installed} is outside the tested range {requirement.specifier}: test the "
        "private internals the package uses, then move the bound")


def test_the_private_submitit_internals_used_are_there() -> None:
    import importlib.util

    from submitit.core import plugins
    from submitit.local.local import Controller
    from submitit.slurm.slurm import SlurmExecutor

    for name in ("_internal_process_submissions", "_submit_command", "_submitit_command_str",
                 "_num_tasks"):
        assert hasattr(SlurmExecutor, name), name
    assert hasattr(plugins, "_iter_submitit_entrypoints")
    for name in ("wait", "run", "kill_tasks", "_forward_signal"):  # local_controller.py's
        assert hasattr(Controller, name), name
    for module in ("submitit.core._submit", "submitit.local._local"):
        assert importlib.util.find_spec(module) is not None, module


def test_a_kernel_install_brings_no_server() -> None:
    names = {Requirement(text).name.replace("_", "-") for text in PYPROJECT["dependencies"]}
    assert not names & {"jupyterlab", "jupyter-server", "notebook", "tornado"}
