"""A cell on the node may start worker processes with ``spawn`` or ``forkserver``.

Such workers are sent the cell's functions by name and import the main module again to find
them; on the node the main module was submitit's, and the pool broke. Real spawned workers:
the local backend runs the real runner in a separate process, one test runs on the cluster.
"""

from __future__ import annotations

from typing import Any

import pytest

NOTEBOOK = """
offset = 100

def halve(x):
    return x / 2
"""

POOL_CELL = """
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

class Tripler:
    def __call__(self, x):
        return 3 * x

def cube(x):
    return offset + x ** 3

print("the cell runs", flush=True)
context = multiprocessing.get_context(START)
with ProcessPoolExecutor(2, mp_context=context) as pool:
    cubes = list(pool.map(cube, range(4)))
    halves = list(pool.map(halve, [2, 4]))
    tripled = list(pool.map(Tripler(), [1, 2]))
"""


def _run_pool_cell(shell: Any, flags: str, start: str, capsys: pytest.CaptureFixture[str]
                   ) -> str:
    shell.run_cell(NOTEBOOK)
    capsys.readouterr()
    shell.run_cell_magic("sbatch", f"{flags} --wait -t 5", POOL_CELL.replace("START", repr(start)))
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert ns.get("cubes") == [100, 101, 108, 127], out
    assert ns["halves"] == [1.0, 2.0] and ns["tripled"] == [3, 6]
    return out


@pytest.mark.parametrize("start", ["spawn", "forkserver"])
def test_a_cell_with_a_spawn_pool_of_its_own_functions_returns_its_result(
        shell: Any, capsys: pytest.CaptureFixture[str], start: str) -> None:
    out = _run_pool_cell(shell, "--backend local", start, capsys)
    assert out.count("the cell runs") == 1, out  # the workers never ran the cell again


@pytest.mark.slurm
def test_a_cell_with_a_spawn_pool_on_the_cluster(shell: Any, slurm_cluster: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -c 2")
    _run_pool_cell(shell, "", "spawn", capsys)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    assert not magics.handles[magics.last_job].ran_locally
