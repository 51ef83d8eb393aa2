"""A shipped object changed in place in the notebook while its job ran: the fetch says so in
one line naming it, and never replaces the notebook's change silently."""

from __future__ import annotations

from typing import Any

import pytest

import hpc_magics


@pytest.mark.slurm
def test_a_shipped_object_changed_in_the_notebook_while_the_job_ran_is_said(
        shell: Any, slurm_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    # big arrays travel beside the pickle (buffer files): compared in full, never sampled
    shell.run_cell("import numpy as np\ndata = [1, 2, 3]\ntable = np.arange(3.0)\n"
                   "wide = np.zeros(500_000)\nsame = np.ones(500_000)")
    ns = shell.user_ns
    data, table, wide = ns["data"], ns["table"], ns["wide"]
    # the job changes data in place, and leaves the arrays as shipped (trio refers to them)
    shell.run_cell_magic("sbatch", "", "data.append(4)\ntrio = (table, wide, same)")
    job_id = shell.magics_manager.registry["HpcMagicsKernel"].last_job
    data.append(99)  # the notebook goes on meanwhile: the job has its shipped copies
    table[0] = -1.0
    wide[250_000] = 1.0  # one element in the middle of 4 MB
    capsys.readouterr()
    shell.run_line_magic("hpc_fetch", "--wait")
    said = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("[hpc_magics] ")]

    assert ns["data"] is data and data == [1, 2, 3, 99]  # the notebook's change is kept
    [about_data] = [line for line in said if "data was changed in the notebook" in line]
    assert f"job {job_id} ran, and by the job: the notebook's data is kept" in about_data
    assert hpc_magics.job(job_id).fetch(show=False)["data"] == [1, 2, 3, 4]  # as it says

    assert ns["trio"][0] is table and ns["trio"][1] is wide  # as they are now: said
    for name in ("table", "wide"):
        [about] = [line for line in said if f"{name} was changed in the notebook" in line]
        assert f"while job {job_id} ran: the results refer to the notebook's {name}" in about
    assert not [line for line in said if "same" in line]  # unchanged: nothing to say
