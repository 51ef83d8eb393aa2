"""A requeued job is still the folder's job (node/task.py notes the requeue,
scheduler/watcher.py reads it), on real files without Slurm.

Slurm gives a requeued job a new submit time (sacct -D shows one per segment), while the
watcher takes an entry whose submit time is far from the folder's sbatch call for another
job that reused the id. Without the note, `%%sbatch --wait --checkpoint` said "left the
queue without results" a minute into a requeued job (the real path is run by
tests/workshop/test_checkpoint_requeue.py)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from hpc_magics.core.scale import ScaleOptions
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.node import task as scale
from hpc_magics.scheduler.job_status import Submission

pytestmark = pytest.mark.usefixtures("restored_signal_handlers")


def node_task(folder: Path, rank: int = 0, restarts: int = 0) -> scale.NodeTask:
    env = {"SLURM_PROCID": str(rank), "SLURM_LOCALID": "0", "SLURM_NTASKS": "2",
           "SLURM_RESTART_COUNT": str(restarts), "SLURM_JOB_ID": "99"}
    return scale.NodeTask(folder, ScaleOptions(checkpoint=("x",), chain=3), env)


def test_rank_zero_notes_the_requeue_and_the_next_segment_keeps_it(tmp_path: Path) -> None:
    other = node_task(tmp_path, rank=1)
    other.prepare({})
    other.note_requeue()
    assert scale.REQUEUED_AT not in scale.read_segment(tmp_path)  # rank 0's job only
    first = node_task(tmp_path)
    first.prepare({"x": 1})
    assert scale.read_segment(tmp_path)[scale.REQUEUED_AT] is None
    first.cell_running = True
    before = time.time()
    first._on_term(signal.SIGTERM, None)  # a preemption that may requeue: noted too
    noted = scale.read_segment(tmp_path)[scale.REQUEUED_AT]
    assert before <= noted <= time.time()
    assert scale.read_segment(tmp_path)["segment"] == 1  # the rest of the file kept
    node_task(tmp_path, restarts=1).prepare({})
    assert scale.read_segment(tmp_path) | {"started_at": 0} == {
        "segment": 2, "of_at_most": 4, "started_at": 0, scale.REQUEUED_AT: noted}


def folder_of(tmp_path: Path, submitted: float, checkpoint: bool) -> JobFolder:
    folder = JobFolder(tmp_path)
    folder.write_meta({"job_id": "99", "backend": "slurm", "cluster": "lab",
                       "submitted_at": submitted, "submit_returned_at": submitted + 0.01,
                       "scale": {"checkpoint": ["x"] if checkpoint else []}})
    return folder


@pytest.mark.parametrize("checkpoint", [True, False])
def test_an_entry_submitted_at_the_requeue_is_the_folders_job(tmp_path: Path,
                                                              checkpoint: bool) -> None:
    submitted = 1_700_000_000.0
    folder = folder_of(tmp_path, submitted, checkpoint)
    requeued = submitted + 300  # the second segment's submit time, as sacct -D shows it
    assert not Submission.of(folder).matches(requeued)  # nothing noted: some other job
    (tmp_path / scale.SEGMENT_FILE).write_text(
        f'{{"segment": 1, "of_at_most": 4, "{scale.REQUEUED_AT}": {requeued - 0.5}}}')
    submission = Submission.of(folder)
    # only a checkpointed job requeues itself; any other keeps the strict reading
    assert submission.matches(requeued) is checkpoint
    assert submission.matches(submitted)  # the first segment still is
    assert not submission.matches(requeued + 3600)  # an id reused an hour later is not
