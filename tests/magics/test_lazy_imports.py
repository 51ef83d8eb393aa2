"""``%load_ext hpc_magics`` imports nothing heavy: the widget stack, submitit, nbconvert,
the scientific stack and the server load when first used (benchmarks/bench_load_ext.py
measures the time; this checks what is imported, in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.oinspect import getdoc

HEAVY = ("ipywidgets", "submitit", "nbconvert", "nbformat", "pandas", "numpy", "matplotlib",
         "cloudpickle", "tornado", "jupyter_server", "jupyter_client", "zmq", "tomllib",
         "hpc_magics.convert", "hpc_magics.shipping", "hpc_magics.backends",
         "hpc_magics.widgets", "hpc_magics.server", "hpc_magics.handle", "hpc_magics.fetching",
         "hpc_magics.scheduler",
         # the core's dataclasses: defining them was most of %load_ext's cost
         "hpc_magics.core.resources", "hpc_magics.core.profiles", "hpc_magics.core.flags",
         "hpc_magics.core.jobscript", "hpc_magics.core.validation", "hpc_magics.core.sweep",
         "hpc_magics.core.scale", "hpc_magics.core.jobs", "hpc_magics.core.directives")

CHILD = """
import json, sys
import hpc_magics
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
before = set(sys.modules)
shell.run_line_magic("load_ext", "hpc_magics")
print(json.dumps({"new": sorted(set(sys.modules) - before), "all": sorted(sys.modules),
                  "cell": sorted(shell.magics_manager.magics["cell"]),
                  "line": sorted(shell.magics_manager.magics["line"])}))
"""


def _fresh_load() -> dict[str, Any]:
    # a user with no kernel jobs: one left behind (another test's, or a killed server's) is
    # looked up in squeue at %load_ext by design (tests/kernel/test_left_behind.py)
    with tempfile.TemporaryDirectory() as kernels:
        done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                              timeout=120, check=True,
                              env={**os.environ, "HPC_MAGICS_KERNELS_DIR": kernels})
    loaded: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_load_ext_imports_nothing_heavy() -> None:
    loaded = _fresh_load()
    assert "sbatch" in loaded["cell"] and {"hpc_resources", "hpc_fetch", "hpc_jobs",
                                           "hpc_live"} <= set(loaded["line"])
    assert any(name.startswith("hpc_magics.magics") for name in loaded["new"])
    heavy = [name for name in loaded["all"]
             if any(name == h or name.startswith(h + ".") for h in HEAVY)]
    assert heavy == []


def test_the_parsers_built_on_first_use_parse_and_give_the_full_help() -> None:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hpc_magics")
    sbatch = shell.magics_manager.magics["cell"]["sbatch"]
    help_text = getdoc(sbatch)  # what %%sbatch? shows
    assert help_text is not None
    assert "--gpus-per-node" in help_text and "--dry-run" in help_text
    assert "Run this cell as a Slurm job" in help_text
    resources = shell.magics_manager.magics["line"]["hpc_resources"]
    view = resources("-t 90min -c 2")
    assert view.request.time_s == 5400 and view.request.cpus_per_task == 2
    shell.run_line_magic("hpc_resources", "--reset")


def test_the_node_engine_starts_submitit_without_numpy_and_numpy_still_loads() -> None:
    code = ("import sys\nfrom hpc_magics.node.engine import import_submitit\n"
            "import_submitit()\nassert 'submitit.core.submission' in sys.modules\n"
            "print('numpy' in sys.modules)\nimport numpy\nprint(numpy.arange(3).sum())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["False", "3"]


def test_the_cell_runner_on_the_node_loads_no_job_script_renderer() -> None:
    """The job's runner starts with every cell: it needs the scale options, not the
    profiles, requests and sbatch flags the notebook side renders job scripts from."""
    code = ("import sys\nimport hpc_magics.node.runner\n"
            "print(sorted(m for m in sys.modules if m.startswith('hpc_magics.core.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    loaded = set(done.stdout.strip().strip("[]").replace("'", "").split(", "))
    assert "hpc_magics.core.scale" in loaded
    assert not loaded & {"hpc_magics.core.jobscript", "hpc_magics.core.profiles",
                         "hpc_magics.core.resources", "hpc_magics.core.flags"}, loaded


def test_the_node_loads_no_accounting_or_notebook_module() -> None:
    """What a job's Python imports before the cell runs (the engine, its usage recorder, the
    runner the pickle names) is most of a trivial cell's time on the node (issue 26's cell
    to result): the kernel's accounting figures and job states, IPython and the widgets
    are never among it."""
    code = ("import sys\nfrom hpc_magics.node.engine import import_submitit\n"
            "import_submitit()\nimport hpc_magics.node.usage_recorder\n"
            "import hpc_magics.node.runner\nprint(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    loaded = set(done.stdout.split())
    assert "hpc_magics.node.runner" in loaded
    assert not loaded & {"hpc_magics.core.efficiency", "hpc_magics.core.jobs",
                         "hpc_magics.core.units", "IPython", "ipywidgets"}, loaded


def test_the_output_copier_starts_with_the_record_format_alone() -> None:
    """Each cell waits for its output copier (``node/tee.py``, a ``python -S`` script) to
    start and end before its results are written: it loads ``live_stream.py`` by itself,
    without importlib.util, json or typing (a third of its start)."""
    from hpc_magics.node import tee

    code = ("import sys\nsys.path.insert(0, sys.argv[1])\nimport tee\n"
            "stream = tee._live_stream()\nprint(stream.record('stdout', b'x'))\n"
            "print(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-S", "-c", code, str(Path(tee.__file__).parent)],
                          capture_output=True, text=True, timeout=120, check=True)
    record, modules = done.stdout.splitlines()
    assert record == "b'o1\\nx'"
    assert not set(modules.split()) & {"importlib.util", "json", "typing"}, modules
