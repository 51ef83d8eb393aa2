"""%%sbatch refuses, before anything is submitted, the #SBATCH lines sbatch would refuse
(``hpc-magics check`` reads a whole job script the same way: tests/test_live_checks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError


@pytest.mark.parametrize(("cell", "said"), [
    ("#SBATCH --mem-4G\nx = 1\n", r"#SBATCH line 1: --mem-4G .* write --mem=4G"),
    ("#SBATCH --array=1-\nx = 1\n", "'1-' is not an index list"),
])
def test_sbatch_cell_refuses_what_sbatch_would_before_submitting(
        shell: Any, job_folders: Any, cell: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        shell.run_cell_magic("sbatch", "--backend local", cell)
    assert job_folders(shell) == []
