"""Starts submitit's engine on the node (``python -m hpc_magics.node.engine FOLDER``).

submitit stays the engine: this runs ``submitit.core._submit`` as ``python -m`` would.
It only skips submitit's eager ``import numpy`` (made "before loading the pickle", in a
``try``, ~0.15 s of a trivial cell's start): numpy still loads, in full, the moment the
job needs it (unpickling an array imports it; so does the cell's ``import numpy``).
"""

from __future__ import annotations

import runpy
import sys

EAGER_IMPORT_SKIPPED = "numpy"


def import_submitit() -> None:
    """Import submitit's job entry point, its eager numpy import skipped."""
    if EAGER_IMPORT_SKIPPED in sys.modules:
        return
    sys.modules[EAGER_IMPORT_SKIPPED] = None  # type: ignore[assignment]  # ImportError
    try:
        import submitit.core.submission  # noqa: F401 - its `import numpy` is skipped
    finally:
        del sys.modules[EAGER_IMPORT_SKIPPED]  # importable again, for the job


def skip_plugin_scan() -> None:
    """The job's environment is submitit's own Slurm or local one, as it was submitted:
    other packages' submitit plugins (found by reading every installed package's entry
    points, ~15 ms of CPU and a walk of site-packages on a shared file system) never
    ran a job of ours."""
    from submitit.core import plugins

    plugins._iter_submitit_entrypoints = lambda: ()


def main() -> None:
    from pathlib import Path

    from .usage_recorder import recorded

    import_submitit()
    skip_plugin_scan()
    # the node's own memory peak and GPU samples, for %hpc_efficiency (core/node_records.py)
    with recorded(Path(sys.argv[1])):
        runpy.run_module("submitit.core._submit", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
