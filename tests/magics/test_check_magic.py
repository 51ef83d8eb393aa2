"""%%hpc_resources --check: a pasted #SBATCH block checked in the notebook, and against the
test cluster itself when the profile is this cluster's."""

from __future__ import annotations

from IPython.testing.globalipapp import start_ipython


def test_pasted_block_is_checked_line_by_line(slurm_cluster: object) -> None:
    shell = start_ipython()
    assert shell is not None
    shell.run_line_magic("load_ext", "hpc_magics")
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
