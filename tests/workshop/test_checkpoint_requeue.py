"""notebooks/checkpoint-requeue.ipynb on the real cluster: a 1-minute job does more than a
minute of work, is warned (USR2), checkpointed, requeued and resumed until it is done, and
ends with exactly the weights of the uninterrupted run."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import Executed, execute

pytestmark = pytest.mark.slurm


def widget_texts(ran: Executed) -> str:
    """The text values of the widgets the kernel left, from the notebook's widget state."""
    state = ran.notebook.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return "\n".join(model["state"]["value"] for model in state.values()
                     if isinstance(model.get("state", {}).get("value"), str))


@pytest.mark.slow  # several 1-minute segments and their requeues: 1-2 minutes
@pytest.mark.timeout(600)
def test_checkpoint_requeue_notebook(student_folder: Path, slurm_cluster: Any) -> None:
    ran = execute("checkpoint-requeue.ipynb", student_folder, timeout=480)
    assert "#SBATCH --time=7-00:00:00" in ran.output_of("%hpc_resources --profile alvis")
    assert "#SBATCH --time=00:01:00" in ran.output_of("%hpc_resources --reset --profile lab")
    script = ran.output_of("%%sbatch --dry-run")
    assert "#SBATCH --signal=USR2@20" in script and "#SBATCH --requeue" in script
    # the job's story: started at 0, resumed further on each time, finished all 45 steps
    story = ran.output_of("%%sbatch --wait")
    assert "starting at step 0" in story
    resumed = [int(step) for step in re.findall(r"^resumed from step (\d+)$", story, re.M)]
    assert resumed and resumed == sorted(resumed) and 0 < resumed[0] and resumed[-1] < 45
    finished = re.search(r"finished: 45 steps, segments started at steps (\[.*\])", story)
    assert finished, story
    starts = ast.literal_eval(finished[1])
    assert starts == [0, *resumed]
    assert "requeueing (segment 2 of at most 6)" in story
    assert story.count("requeueing (segment") == len(resumed)
    # the same weights as the uninterrupted run, to the last bit
    compared = ran.output_of('print("segments started at steps"')
    job_weights = re.search(r"job's weights: +(\[.*\])", compared)
    alone = re.search(r"uninterrupted weights: +(\[.*\])", compared)
    assert job_weights and alone and job_weights[1] == alone[1], compared
    assert "exactly equal: True" in compared
    # one sacct record per segment: all requeued but the last
    segments = ran.output_of("import hpc_magics")
    assert re.search(r"job \d+ COMPLETED", segments), segments
    states = re.findall(r"^segment (\d+): (\w+)", segments, re.M)
    assert [int(index) for index, _ in states] == list(range(1, len(starts) + 1))
    assert [state for _, state in states] == ["REQUEUED"] * len(resumed) + ["COMPLETED"]
    assert f"{len(starts)} segments" in segments
    sacct = ran.output_of("!sacct")
    assert sacct.count("REQUEUED") == len(resumed) and sacct.count("COMPLETED") == 1
    # the job widget told which segment ran, the last one at the end
    assert f"segment {len(starts)} of ≤6" in widget_texts(ran)
