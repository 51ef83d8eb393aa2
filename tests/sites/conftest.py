"""tests/sites: the --release clusters (scripts/slurm-cluster --release R), hosts apart.

The magics' fixtures (a real IPython shell with hpc_magics loaded, private job folders) come
from tests/magics/conftest.py, loaded here rather than copied.
"""

from __future__ import annotations

from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

_SPEC = spec_from_file_location("_magics_fixtures",
                                Path(__file__).resolve().parents[1] / "magics" / "conftest.py")
assert _SPEC is not None and _SPEC.loader is not None
_MAGICS = module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MAGICS)
shell = _MAGICS.shell
job_folders = _MAGICS.job_folders
