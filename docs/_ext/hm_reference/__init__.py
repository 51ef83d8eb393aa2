"""``docs/reference.md``, generated from the definitions themselves so that it never drifts.

Every magic's argument parser, every ``hpc-magics`` subcommand's, the configurable traits
(the kernel's magics, the server extension, the nbconvert exporter) and the environment
variables (``environment.toml``, the one table of them) become one Markdown page.

``python docs/_ext/hm_reference`` refreshes the page; ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

from pathlib import Path

# A tool of the docs, not of the package: users never need it installed.
REFERENCE_PAGE = Path(__file__).resolve().parents[2] / "reference.md"
REFRESH_COMMAND = "python docs/_ext/hm_reference"
