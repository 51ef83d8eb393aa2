"""A Slurm kernel's node side is ``python -m hpc_magics.node.kernel``; the job scripts of
kernel jobs queued before an upgrade name ``hpc_magics.kernel.node``, which still starts it.
(An installed kernelspec names neither: its argv is the wrapped kernel's, and the node
command is built when the kernel starts, so no kernel needs installing again.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hpc_magics.kernel.launch import node_command


@pytest.mark.parametrize("module", ["hpc_magics.node.kernel", "hpc_magics.kernel.node"])
def test_both_module_paths_run_the_node_side(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "only-a-folder"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "usage: python -m hpc_magics.node.kernel FOLDER -- KERNEL ARGV" in done.stderr


def test_new_kernel_jobs_name_the_node_package() -> None:
    from pathlib import Path
    from types import SimpleNamespace

    command = node_command(SimpleNamespace(python="/usr/bin/python3"),  # type: ignore[arg-type]
                           SimpleNamespace(path=Path("/jobs/k")),  # type: ignore[arg-type]
                           ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    assert command[:5] == ["/usr/bin/python3", "-u", "-m", "hpc_magics.node.kernel", "/jobs/k"]
