"""``docs/reference.md``, generated from the definitions themselves so that it never drifts.

Every magic's argument parser, every ``hpc-magics`` subcommand's, the configurable traits
(the kernel's magics, the server extension, the nbconvert exporter) and the environment
variables (``environment.toml``, the one table of them) become one Markdown page.

``python -m hpc_magics.reference`` refreshes the page; ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

from pathlib import Path

# The page in a clone of the repository (an installed wheel has no docs/: pass -o FILE).
REFERENCE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"
REFRESH_COMMAND = "python -m hpc_magics.reference"
