"""One task's side of a scaled job (node/task.py), on real files, without Slurm:
variables, checkpoint save/merge/restore, the end of the chain, gathered values."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

import hpc_magics
from hpc_magics.core.scale import ScaleOptions
from hpc_magics.jobfolder import files
from hpc_magics.node import task as scale


def task(folder: Path, rank: int = 0, restarts: int = 0, **options: object) -> scale.NodeTask:
    env = {"SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank % 2), "SLURM_NTASKS": "4",
           "SLURM_RESTART_COUNT": str(restarts), "SLURM_JOB_ID": "99"}
    return scale.NodeTask(folder, ScaleOptions(**options), env)  # type: ignore[arg-type]


pytestmark = pytest.mark.usefixtures("restored_signal_handlers")


def test_rank_variables_and_a_checkpoint_that_comes_back(tmp_path: Path) -> None:
    first = task(tmp_path, checkpoint=("epoch", "weights"), chain=2)
    namespace: dict[str, object] = {"rank": "the notebook's"}
    first.prepare(namespace)
    assert (namespace["rank"], namespace["local_rank"], namespace["world_size"]) == (0, 0, 4)
    assert namespace["resumed"] is False and hpc_magics.resumed is False
    namespace["epoch"] = 3  # weights not defined yet: saved without it
    assert scale.checkpoint() == tmp_path / scale.CHECKPOINT_FILE
    namespace.update(epoch=4, weights=[1.0])
    first.save_checkpoint()
    second = task(tmp_path, restarts=1, checkpoint=("epoch", "weights"), chain=2)
    again: dict[str, object] = {}
    second.prepare(again)
    assert again["epoch"] == 4 and again["weights"] == [1.0]
    assert again["resumed"] is True and hpc_magics.resumed is True
    assert '"segment": 2' in (tmp_path / scale.SEGMENT_FILE).read_text()


def test_only_rank_zero_saves_and_the_chain_ends(tmp_path: Path) -> None:
    other = task(tmp_path, rank=1, checkpoint=("x",))
    other.prepare({"x": 1})
    assert other.save_checkpoint() is None and not (tmp_path / scale.CHECKPOINT_FILE).exists()
    last = task(tmp_path, restarts=3, checkpoint=("x",), chain=3)
    namespace: dict[str, object] = {}
    last.prepare(namespace)
    namespace["x"] = 5
    last.cell_running = True
    last._on_limit(signal.SIGUSR2, None)  # no requeue left: saved, and the cell goes on
    assert files.load_own(tmp_path / scale.CHECKPOINT_FILE)["values"] == {"x": 5}


def test_gathered_values_by_rank(tmp_path: Path) -> None:
    for rank in (0, 1, 3):  # rank 2 wrote nothing (it failed)
        task(tmp_path, rank=rank, gather=("loss",)).write_gathered({"loss": rank * 0.5})
    gathered, ranks = files.load_gathered(tmp_path, ("loss",))
    assert gathered == {"loss": [0.0, 0.5, None, 1.5]} and ranks == 3


def test_checkpoint_outside_a_job_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match="--checkpoint"):
        hpc_magics.checkpoint()
