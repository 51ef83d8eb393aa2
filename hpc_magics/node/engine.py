"""Starts submitit's engine on the node (``python -m hpc_magics.node.engine FOLDER``), as
``python -m submitit.core._submit`` would, without its eager ``import numpy`` (~0.15 s of a
trivial cell's start): numpy still loads the moment the job needs it.
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
    """Other packages' submitit plugins never ran a job of ours: not looked for (a walk of
    every installed package's entry points, on a shared file system)."""
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
