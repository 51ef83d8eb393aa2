"""A Slurm kernel's node side is ``python -m hpc_magics.node.kernel``. (An installed
kernelspec does not name it: its argv is the wrapped kernel's, and the node command is built
when the kernel starts.)"""

from __future__ import annotations

import subprocess
import sys

from hpc_magics.kernel.launch import node_command


def test_the_node_side_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "hpc_magics.node.kernel", "only-a-folder"],
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
