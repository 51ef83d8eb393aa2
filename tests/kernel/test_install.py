"""``hpc-magics kernel install|list|remove`` without starting anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hpc_magics.cli import main as cli_main
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.kernel.spec import PROVISIONER_NAME, KernelRequest, display_name

from .conftest import install, kernelspec_file


def test_display_name_shows_the_request() -> None:
    kernel = KernelRequest(ResourceRequest(profile="lab", time_s=3600,
                                           gpus_per_node=None, gres="gpu:1"), sys.executable)
    assert display_name("Python 3 (ipykernel)", kernel) == "Python 3 (Slurm: debug, 1 GPU, 1h)"
    step = KernelRequest(ResourceRequest(profile="lab"), sys.executable, jobid="123")
    assert display_name("Python 3", step) == "Python 3 (Slurm job 123)"


def test_install_writes_a_kernelspec_using_the_provisioner(kernel_prefix: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    assert install("gpu-node", kernel_prefix, "--profile", "lab", "-p", "long", "-t", "1h",
                   "--gpus-per-node", "v100:1") == 0
    spec = json.loads(kernelspec_file(kernel_prefix, "gpu-node").read_text())
    provisioner = spec["metadata"]["kernel_provisioner"]
    assert provisioner["provisioner_name"] == PROVISIONER_NAME
    assert provisioner["config"]["request"]["gpus_per_node"] == "v100:1"
    assert provisioner["config"]["request"]["time_s"] == 3600
    assert spec["display_name"] == "Python 3 (Slurm: long, 1 v100 GPU, 1h)"
    assert "{connection_file}" in spec["argv"]  # the node fills it in
    assert "cancels it" in capsys.readouterr().out

    assert cli_main(["kernel", "list"]) == 0
    assert "gpu-node" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # removed as any kernel: `jupyter kernelspec remove`
        cli_main(["kernel", "remove", "gpu-node"])


def test_install_refuses_a_gpu_type_the_profile_lacks(kernel_prefix: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert install("bad", kernel_prefix, "--profile", "lab", "--gpus-per-node", "a100:1") == 2
    error = capsys.readouterr().err.strip()
    assert "'a100' does not exist" in error and "v100" in error
    assert len(error.splitlines()) == 1
    assert not kernelspec_file(kernel_prefix, "bad").exists()


def test_install_refuses_an_unknown_kernel(kernel_prefix: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert install("x", kernel_prefix, "--profile", "lab", "--kernel", "no-such-kernel") == 2
    assert "'no-such-kernel' is not an installed kernel" in capsys.readouterr().err


def test_the_package_declares_the_provisioner_entry_point() -> None:
    """What jupyter_client looks up by the kernelspec's provisioner_name (an install made
    before this entry point existed lacks it: conftest adds it there)."""
    import importlib

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["entry-points"][
        "jupyter_client.kernel_provisioners"]
    module, _, name = declared[PROVISIONER_NAME].partition(":")
    from jupyter_client.provisioning.provisioner_base import KernelProvisionerBase

    assert issubclass(getattr(importlib.import_module(module), name), KernelProvisionerBase)
