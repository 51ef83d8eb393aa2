"""%%hpc_resources --check: a pasted #SBATCH block checked in the notebook, and against the
test cluster itself when the profile is this cluster's; %%sbatch refuses what sbatch would."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError


def test_pasted_block_is_checked_line_by_line(shell: Any, slurm_cluster: object) -> None:
    view = shell.run_cell_magic("hpc_resources", "--check --profile lab",
                                "#SBATCH -p debug -t 30\n#SBATCH --gres=gpu:v100:1\n")
    text = repr(view)
    assert "exceeds the 00:20:00 limit" in text and "FAIL" in text
    assert "(live)" in text  # scontrol's MaxTime says the same
    assert "color" in view._repr_html_()
    fits = repr(shell.run_cell_magic("hpc_resources", "--check --profile lab",
                                     "#SBATCH -p long -t 5 --gres=gpu:v100:1\n"))
    assert "OK: 0 error(s)" in fits and "sbatch --test-only expects it to start at" in fits
    elsewhere = repr(shell.run_cell_magic("hpc_resources", "--check --profile generic",
                                          "#SBATCH --mem-4G -t 10\n"))
    assert "write --mem=4G" in elsewhere and "live:" not in elsewhere  # not this cluster
    session = repr(shell.run_line_magic("hpc_resources", "--check"))
    assert "OK:" in session  # the session's own request, rendered and checked


@pytest.mark.parametrize(("cell", "said"), [
    ("#SBATCH --mem-4G\nx = 1\n", r"#SBATCH line 1: --mem-4G .* write --mem=4G"),
    ("#SBATCH --array=1-\nx = 1\n", "'1-' is not an index list"),
])
def test_sbatch_cell_refuses_what_sbatch_would_before_submitting(
        shell: Any, job_folders: Any, cell: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        shell.run_cell_magic("sbatch", "--backend local", cell)
    assert job_folders(shell) == []
