"""notebooks/notebook-to-batch.ipynb, run top to bottom on the test cluster: the request it
shows, the script and job file `hpc-magics convert` wrote, the batch job it submitted with
plain sbatch, and the final losses of the notebook, the batch job and the %%sbatch cell."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hpc_magics.scheduler import commands

from .conftest import Executed, execute

NOTEBOOK = "notebook-to-batch.ipynb"
# The notebook runs once for all the tests (15-40 s, four jobs; longer on a busy cluster).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def final_loss(text: str, label: str) -> float:
    """The number printed after `label` (the full repr of a float)."""
    found = re.findall(re.escape(label) + r"\s*(\S+)", text)
    assert len(found) == 1, f"{label!r} printed {len(found)} times in:\n{text}"
    return float(found[0])


def live_lines(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory, slurm_cluster: Any) -> Executed:
    folder = tmp_path_factory.mktemp("course") / "my course"
    return execute(NOTEBOOK, folder, timeout=600)


def test_the_request_shown_for_alvis_and_the_lab(ran: Executed) -> None:
    mistake = ran.output_of("%hpc_resources --profile alvis --gpus-per-node 1 ")
    assert "error: alvis needs a typed GPU request like --gpus-per-node=A40:1" in mistake
    alvis = ran.output_of("%hpc_resources --profile alvis --gpus-per-node A40:1")
    for line in ("#SBATCH --account=NAISS2024-5-1", "#SBATCH --time=02:00:00",
                 "#SBATCH --gpus-per-node=A40:1"):
        assert line in alvis.splitlines()
    assert "≈ 2 GPU-h" in alvis and "error" not in alvis
    lab = ran.output_of("%hpc_resources --reset")
    assert [line for line in lab.splitlines() if line.startswith("#SBATCH")] == [
        "#SBATCH --partition=debug", "#SBATCH --time=00:05:00", "#SBATCH --mem=1G"]
    assert "NAISS" not in lab and "error" not in lab
    assert ran.images() == 2  # the data and the loss curve, in the notebook


def test_the_converted_script_and_job_file(ran: Executed) -> None:
    assert "train.ipynb: 5 cells" in ran.output_of("import nbformat")
    converted = ran.output_of("!hpc-magics convert")
    assert "wrote train.py" in converted and "wrote train.sbatch" in converted
    shown_sbatch = ran.output_of("!cat train.sbatch").splitlines()
    assert [line for line in shown_sbatch if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=train", "#SBATCH --partition=debug", "#SBATCH --time=00:05:00",
        "#SBATCH --mem=1G"]
    assert shown_sbatch[-1] == "python train.py"
    script = (ran.folder / "train.py").read_text()
    shown_script = ran.output_of("!cat train.py").replace("\r\n", "\n")  # `!` runs in a pty
    assert shown_script.strip() == script.strip()
    # the display is kept as comments, the computation and the saved figure run
    for shown in ("plt.scatter(", "plt.show()", "plt.title("):
        assert f"# [display] {shown}" in script
        assert not any(shown in line for line in live_lines(script))
    live = live_lines(script)
    assert 'fig.savefig("loss-curve.png", dpi=80)' in live
    assert "params, losses = train(points, labels, EPOCHS, LEARNING_RATE, SEED)" in live
    assert 'print("final loss", final_loss)' in live


def test_the_batch_job_completed_with_the_notebooks_loss(ran: Executed) -> None:
    job_id = submitted_id(ran.output_of("submitted = !sbatch"))
    assert f"job {job_id} COMPLETED" in ran.output_of("import subprocess")
    # Slurm's own word, asked here rather than read from the notebook
    answer = commands.run(["sacct", "-X", "-n", "-P", "-o", "State,ExitCode", "-j", job_id],
                          timeout=60)
    assert answer.stdout.split() == ["COMPLETED|0:0"]
    interactive = final_loss(ran.output_of("accuracy = "), "final loss")
    batch_file = (ran.folder / f"slurm-{job_id}.out").read_text()
    assert final_loss(batch_file, "final loss") == interactive
    compared = ran.output_of("from pathlib import Path")
    assert final_loss(compared, "in the notebook:") == interactive
    assert final_loss(compared, "in the batch job:") == interactive
    assert "the same: True" in compared
    # it ran to its end with nothing on stderr (the log holds both): no display complaint
    assert batch_file.strip().splitlines()[-1].startswith("final loss")


def test_hpc_magics_submit_runs_the_notebook_with_the_same_loss(ran: Executed) -> None:
    interactive = final_loss(ran.output_of("accuracy = "), "final loss")
    submitted = ran.output_of("submit_output = !hpc-magics submit")
    job_id = re.search(r"submitted job (\d+) \(slurm\)", submitted)
    assert job_id, submitted
    assert f"job {job_id.group(1)}: COMPLETED" in submitted
    shown = ran.output_of("executed_path = ")
    assert "the executed notebook has 2 figures" in shown
    assert final_loss(shown, "final loss") == interactive
    assert "the same: True" in shown


def test_the_sbatch_cell_brings_back_the_same_loss(ran: Executed) -> None:
    interactive = final_loss(ran.output_of("accuracy = "), "final loss")
    shown = ran.output_of('print("final loss from the %%sbatch job:"')
    assert final_loss(shown, "%%sbatch job:") == interactive
    assert "the same: True" in shown
    # the two jobs hpc_magics submitted: the notebook (hpc-magics submit) and the cell
    kinds = [json.loads((folder / "meta.json").read_text()).get("kind")
             for folder in (ran.folder / "hpc_jobs").iterdir()]
    assert len(kinds) == 2 and kinds.count("notebook") == 1, kinds


def submitted_id(text: str) -> str:
    found = re.fullmatch(r"submitted batch job (\d+)\s*", text)
    assert found, text
    return found.group(1)
