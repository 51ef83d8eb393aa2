"""A converted notebook survives worker processes that import the script again.

``spawn`` and ``forkserver`` workers (dask.distributed's nannies, Python 3.14's default for
multiprocessing) run the main script again as ``__mp_main__``; with no guard they ran the
whole notebook again and failed ("BrokenProcessPool", "bootstrapping phase"). Real spawned
workers here, no fakes.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from hpc_magics.shipping.main_guard import GUARD, guard_actions

from .conftest import notebook, run_converted

POOL_NOTEBOOK = (
    "import multiprocessing\nfrom concurrent.futures import ProcessPoolExecutor\nSCALE = 3\n",
    'def work(x):\n    """Runs in a worker: reads SCALE there."""\n    return x * SCALE\n\n'
    "class Doubler:\n    def __call__(self, x):\n        return 2 * x\n",
    'banner = """the notebook\n  runs once"""\nprint(banner.splitlines()[1].strip(), flush=True)\n'
    "spawn = multiprocessing.get_context('spawn')\n"
    "with ProcessPoolExecutor(2, mp_context=spawn) as pool:\n"
    "    scaled = list(pool.map(work, range(4)))\n"
    "with spawn.Pool(2) as pool:\n    doubled = pool.map(Doubler(), range(3))\n",
    "import json; json.dump({'scaled': scaled, 'doubled': doubled}, open('out.json', 'w'))",
)


def test_converted_notebook_with_a_spawn_pool_runs_top_to_bottom(tmp_path: Path) -> None:
    script, result = run_converted(notebook(*POOL_NOTEBOOK), tmp_path)
    assert (tmp_path / "out.json").read_text() == '{"scaled": [0, 3, 6, 9], "doubled": [0, 2, 4]}'
    # the workers found work and Doubler without running the notebook's body again
    assert result.stdout.count("runs once") == 1, result.stdout
    assert GUARD in script


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask.distributed is not installed")
def test_converted_notebook_with_a_dask_cluster_runs(tmp_path: Path) -> None:
    nb = notebook("from dask.distributed import Client, LocalCluster\nimport dask\n",
                  "def square(x):\n    return x * x\n",
                  "client = Client(n_workers=2, threads_per_worker=1, processes=True)\n"
                  "total = sum(client.gather(client.map(square, range(5))))\nclient.close()\n"
                  "open('total.txt', 'w').write(str(total))")
    run_converted(nb, tmp_path)
    assert (tmp_path / "total.txt").read_text() == "30"


def _guarded(source: str, known: set[str] | None = None) -> str:
    result = guard_actions(source, set() if known is None else known)
    ast.parse(result)  # always Python
    return result


def test_definitions_stay_outside_and_actions_go_under_the_guard() -> None:
    source = ("import os\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n"
              "N = 10 ** 3\nrows = load(N)\n@decorate(rows)\ndef late():\n    pass\n"
              "def early(x=N):\n    return rows\n")
    guarded = _guarded(source, {"load", "decorate"})
    head, _, tail = guarded.partition(GUARD)
    assert "import numpy as np" in head and "N = 10 ** 3" in head
    assert "    rows = load(N)" in tail and "    def late():" in tail  # reads an action's value
    assert tail.rstrip().endswith("def early(x=N):\n    return rows")  # outside again


def test_a_multi_line_string_keeps_its_text_under_the_guard() -> None:
    source = 'print("""first\n  second\nthird""")\nx = f"""a\n{1}\nb"""\n'
    guarded = _guarded(source)
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(guarded, namespace)
    assert namespace["x"] == "a\n1\nb"
    assert '  second\nthird""")' in guarded


def test_statements_sharing_a_line_are_guarded_together() -> None:
    assert _guarded("import os; run()\n") == GUARD + "    import os; run()\n"


def test_a_cell_that_is_not_python_is_left_as_it_is() -> None:
    assert _guarded("# [not python] cell 2\n# def broken(:\n") == (
        "# [not python] cell 2\n# def broken(:\n")
